package io.scr.cache;

import java.io.Closeable;
import java.io.IOException;

/**
 * A value the {@link LeaseCache} can hold: it owns file descriptors, says how many, can tell when
 * it has gone stale, and is closed exactly once by the cache.
 *
 * <p><b>Ownership.</b> A value returned by a {@link ValueLoader} belongs to the cache from then on:
 * the cache calls {@link #close()} exactly once, in a task on its {@link Scheduler} (or, once the
 * cache is closing, on the thread that retires the value or releases its last lease; or, for a
 * value the fd budget refuses right after loading, on the loading thread), never while any lease is
 * open and never under a cache lock. Callers must not close a leased value themselves.
 *
 * <p><b>Thread-safety.</b> {@link #fdCost()} is read once, right after loading. {@link #isValid()}
 * is called from any thread, on every lease and during maintenance (under a stripe lock), so it
 * must be cheap, non-blocking and thread-safe; for a replica it is a read of the shared-memory
 * slot's VALID bit. On a lease the cache calls it only while holding that lease, so never once
 * {@link #close()} may have started. During maintenance it calls it on a linked entry that was idle
 * when looked at under its stripe lock, and that is <em>not</em> a guarantee that close has not
 * started: a retirer sets RETIRED before it takes the stripe lock to unlink, and when the entry was
 * leased at that moment the last lease's release queues the close at once, with no lock, while the
 * node may still be linked. So a thread that leased, invalidated and released the entry in the
 * instant between the maintenance thread's state check and its call can have the value closing (or
 * closed) while {@code isValid()} runs. The answer is then ignored (the entry is already retired,
 * so maintenance cannot retire it again), but the call must still be safe on a closed or closing
 * value: no exception, no blocking, no crash (a replica's slot reads as zero, not VALID, once its
 * segment is gone).
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
