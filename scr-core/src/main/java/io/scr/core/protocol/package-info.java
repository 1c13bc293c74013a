/**
 * The short-circuit ops of HDFS's DataTransferProtocol (87 REQUEST_SHORT_CIRCUIT_FDS, 88
 * RELEASE_SHORT_CIRCUIT_FDS, 89 REQUEST_SHORT_CIRCUIT_SHM), byte-for-byte as the stock client and
 * DataNode encode them. Shared by the client ({@code io.scr.core.net}) and the DataNode shim. No
 * I/O policy lives here: callers own sockets, timeouts and fds.
 */
package io.scr.core.protocol;
