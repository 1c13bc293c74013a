/**
 * The short-circuit ops of HDFS's DataTransferProtocol (87 REQUEST_SHORT_CIRCUIT_FDS, 88
 * RELEASE_SHORT_CIRCUIT_FDS, 89 REQUEST_SHORT_CIRCUIT_SHM) and the scr shim's op-127 extension
 * frames, byte-for-byte as the stock client and DataNode encode them. Used by the client's
 * exchanges ({@code io.scr.core.internal.net}); the request decoders and response encoders serve
 * the tests that play the DataNode's side. The DataNode shim has its own codec and imports nothing
 * from here. No I/O policy lives here: callers own sockets, timeouts and fds.
 */
package io.scr.core.internal.protocol;
