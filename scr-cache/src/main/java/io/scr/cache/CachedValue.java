package io.scr.cache;

import java.io.Closeable;
import java.io.IOException;

/**
 * A value the {@link LeaseCache} can hold: it owns file descriptors, says how many, can tell when
 * it has gone stale, and is closed exactly once by the cache.
 *
 * <p><b>Ownership.</b> A value returned by a {@link ValueLoader} belongs to the cache from then on:
 * the cache calls {@link #close()} exactly once, on its closer thread (or, after the cache has been
 * closed, on the thread that releases the last lease), never while any lease is open and never
 * under a cache lock. Callers must not close a leased value themselves.
 *
 * <p><b>Thread-safety.</b> {@link #fdCost()} is read once, right after loading. {@link #isValid()}
 * is called from any thread, on every lease and during maintenance (under a stripe lock), so it
 * must be cheap, non-blocking and thread-safe; for a replica it is a read of the shared-memory
 * slot's VALID bit. The cache never calls it once {@link #close()} may have started: on a lease
 * only while holding that lease, during maintenance only on a linked, idle entry under its stripe
 * lock (an entry is unlinked under that lock before it is queued for closing).
 */
public interface CachedValue extends Closeable {

  /**
   * Returns how many file descriptors this value holds open until it is closed (for a replica: 2,
   * block file and meta file, or 1 once the meta file's checksums are mapped and its fd closed).
   * Counted against the cache's fd budget. Must not be negative.
   */
  int fdCost();

  /**
   * Returns false once this value must no longer be served (for a replica: its slot's VALID bit was
   * cleared by the DataNode). A lease that finds an invalid value evicts it and loads a fresh one.
   */
  boolean isValid();

  /**
   * Closes the value's file descriptors. Called exactly once by the cache. An exception is logged
   * and counted; the fds are considered released either way.
   */
  @Override
  void close() throws IOException;
}
