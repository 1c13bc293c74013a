/**
 * The rules a DataNode's UNIX socket path must meet (HDFS's {@code
 * DomainSocket.validateSocketPathSecurity0}, in Java) and the local facts they are judged by: who
 * owns a directory, a process's effective uid, user names. Shared by the client's {@code scr
 * doctor} and the DataNode shim, which both judge paths the way the DataNode does. Needs nothing
 * but the JDK (no Hadoop), and reads only {@code stat(2)} facts, {@code /proc/PID/status} and
 * {@code /etc/passwd}.
 */
package io.scr.socketpath;
