/**
 * Talking to DataNodes over UNIX sockets (junixsocket): a pool of long-lived connections per socket
 * path with bounded timeouts and one stale-retry, the three short-circuit exchanges with fd
 * receipt, per-path backoff by failure class, and the watcher that notices when a DataNode drops a
 * shared-memory segment. Independent of the FileSystem layer.
 */
package io.scr.core.internal.net;
