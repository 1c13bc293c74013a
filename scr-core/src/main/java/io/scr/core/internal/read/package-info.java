/**
 * Reading a local replica: the meta-file header, the two open files of a replica, and the reader
 * that fills the caller's buffer with positional reads and verifies only the covering checksum
 * chunks. Independent of sockets, caches and the FileSystem layer.
 */
package io.scr.core.internal.read;
