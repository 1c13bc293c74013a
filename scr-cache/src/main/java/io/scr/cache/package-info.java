/**
 * scr-cache: a lock-striped, fd-budgeted lease cache for open block replicas.
 *
 * <p>This module sits under {@code scr-core} and knows nothing of Hadoop, shared memory or sockets.
 * {@code scr-core} keeps one {@link io.scr.cache.LeaseCache} of open replicas (a data fd, a meta fd
 * and a shared-memory slot) and wraps every positional read in a {@link io.scr.cache.Lease}:
 *
 * <pre>{@code
 * try (Lease<Replica> lease = replicas.lease(blockKey, this::openReplica)) {
 *   return lease.value().pread(position, buffer);
 * }
 * }</pre>
 *
 * <p>It replaces the stock {@code ShortCircuitCache}, which keeps one lock per cache, closes fds
 * while holding it, counts only unreferenced replicas against a hand-tuned size (256 by default)
 * and thrashes silently when that size is below the working set. Here hits take no lock, fds are
 * closed off the readers' threads, the default size comes from the process fd limit, and thrash is
 * detected and reported with the capacity the working set needs. See {@code docs/cache.md}.
 *
 * <p>The public surface is this package's interfaces, {@link io.scr.cache.LeaseCacheConfig} and the
 * exception and statistics types; the implementation classes are package-private.
 */
package io.scr.cache;
