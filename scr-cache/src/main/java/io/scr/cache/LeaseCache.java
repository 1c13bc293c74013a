package io.scr.cache;

import java.io.IOException;
import java.util.function.Predicate;

/**
 * A cache of open, fd-holding values handed out as reference-counted {@link Lease}s.
 *
 * <p>The model (details in {@code docs/cache.md}):
 *
 * <ul>
 *   <li>{@link #lease} returns a lease on the cached value, loading it on a miss. Concurrent leases
 *       of one key share a single load. A value that has gone stale ({@link CachedValue#isValid()}
 *       false) is evicted and replaced, never served.
 *   <li>Entries with no open lease are idle. Only idle entries are evicted: least recently released
 *       first when the cache holds more than its capacity or a load needs fds beyond the fd budget,
 *       and after the idle expiry.
 *   <li>Evicted, expired and invalidated values are closed by a task on the cache's {@link
 *       Scheduler} (by default its own closer thread), never under a cache lock and never while
 *       leased: a value removed while leased is closed when its last lease is closed.
 *   <li>Without an explicit capacity the cache sizes itself from the process fd limit, and it warns
 *       (rate-limited) when it thrashes, naming the capacity the working set needs.
 * </ul>
 *
 * <p><b>Thread-safety.</b> All methods are thread-safe. A hit takes no lock.
 *
 * @param <K> the key type; must have value-based {@code equals} and {@code hashCode}
 * @param <V> the value type
 */
public interface LeaseCache<K, V extends CachedValue> extends AutoCloseable {

  /**
   * Creates a cache with the given configuration and schedules its maintenance (on a closer thread
   * of its own unless the configuration names a {@link Scheduler}).
   */
  static <K, V extends CachedValue> LeaseCache<K, V> create(LeaseCacheConfig config) {
    return new StripedLeaseCache<>(config);
  }

  /**
   * Returns a lease on the value for {@code key}, calling {@code loader} on a miss. The caller must
   * close the lease.
   *
   * @throws LeaseLoadException if the load (this thread's, or the one it waited on) failed; the
   *     cause is the loader's exception. {@link FdBudgetExhaustedException} if the fd budget left
   *     no room for the load.
   * @throws java.io.InterruptedIOException if interrupted while waiting for another thread's load;
   *     the interrupt status is kept and the cache is unaffected
   * @throws LeaseCacheClosedException if the cache has been closed
   */
  Lease<V> lease(K key, ValueLoader<? super K, ? extends V> loader) throws IOException;

  /**
   * As {@link #lease(Object, ValueLoader)}, but opens the caller's closed {@code into} instead of
   * allocating a lease: a hit allocates nothing. On return {@code into} is open; on an exception it
   * stays closed.
   *
   * @throws IllegalStateException if {@code into} is open
   */
  void lease(K key, ValueLoader<? super K, ? extends V> loader, ReusableLease<V> into)
      throws IOException;

  /**
   * Opens the caller's closed {@code into} on the cached value for {@code key} if there is one that
   * is loaded, valid and not retired (counted as a hit), and returns true; otherwise returns false
   * and changes nothing (no miss is counted, nothing is loaded, stale values are left for {@link
   * #lease}). Lock-free and allocation-free. The key is only looked up, never stored, so the caller
   * may pass a mutable lookup key that it reuses.
   *
   * @throws IllegalStateException if {@code into} is open
   */
  boolean leaseIfPresent(K key, ReusableLease<V> into);

  /**
   * Removes the entry for {@code key}, if any. Its value is closed once no lease holds it; open
   * leases keep working. A load of the key in progress completes for its callers but is not cached.
   */
  void invalidate(K key);

  /**
   * Removes every entry whose key matches, as {@link #invalidate} does. The predicate is called
   * without any cache lock held.
   *
   * @return the number of entries removed
   */
  int invalidateIf(Predicate<? super K> predicate);

  /**
   * Runs maintenance now: expires idle entries past the idle expiry, evicts idle stale ones,
   * enforces capacity and evaluates the thrash detector. The scheduler runs this periodically;
   * tests call it (or run the scheduler's due tasks) after advancing a fake ticker.
   */
  void cleanUp();

  /**
   * Returns a snapshot of the counters and gauges. Walks the entries, so call it periodically, not
   * per read.
   */
  LeaseCacheStats stats();

  /** Returns the effective configuration: the sizes chosen, and why. */
  LeaseCacheConfig.Sizing sizing();

  /**
   * Closes the cache: removes every entry, closes idle values now and leased values when their last
   * lease is closed, and stops the cache's own closer thread (an injected scheduler is left
   * running). Idempotent. Later leases throw {@link LeaseCacheClosedException}.
   */
  @Override
  void close();
}
