package io.scr.cache;

/** Why an entry left the cache. Each removal is counted under exactly one cause. */
public enum RemovalCause {
  /** Evicted, least recently released first, because the cache held more entries than capacity. */
  SIZE,
  /** Evicted so that a load could open new fds without exceeding the fd budget. */
  FD_BUDGET,
  /** Idle (unleased) for longer than the idle expiry. */
  EXPIRED,
  /** Removed by {@link LeaseCache#invalidate} or {@link LeaseCache#invalidateIf}. */
  INVALIDATED,
  /** Found invalid ({@link CachedValue#isValid()} false) on lease or during maintenance. */
  STALE,
  /** Removed because the cache was closed. */
  CACHE_CLOSED
}
