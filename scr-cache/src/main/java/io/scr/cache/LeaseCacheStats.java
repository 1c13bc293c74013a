package io.scr.cache;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * A point-in-time snapshot of a {@link LeaseCache}'s counters (monotonic since creation) and gauges
 * (current values). Immutable. Counters are read one after another without a global lock, so a
 * snapshot taken under load may be off by the operations in flight.
 */
public final class LeaseCacheStats {
  private final long hits;
  private final long misses;
  private final long loads;
  private final long loadFailures;
  private final long totalLoadNanos;
  private final long maxLoadNanos;
  private final EnumMap<RemovalCause, Long> removals;
  private final long closeFailures;
  private final long thrashWarnings;
  private final int recommendedCapacity;
  private final int entries;
  private final int leasedEntries;
  private final long openFds;
  private final int capacity;
  private final long fdBudget;

  LeaseCacheStats(
      long hits,
      long misses,
      long loads,
      long loadFailures,
      long totalLoadNanos,
      long maxLoadNanos,
      EnumMap<RemovalCause, Long> removals,
      long closeFailures,
      long thrashWarnings,
      int recommendedCapacity,
      int entries,
      int leasedEntries,
      long openFds,
      int capacity,
      long fdBudget) {
    this.hits = hits;
    this.misses = misses;
    this.loads = loads;
    this.loadFailures = loadFailures;
    this.totalLoadNanos = totalLoadNanos;
    this.maxLoadNanos = maxLoadNanos;
    this.removals = new EnumMap<>(removals);
    this.closeFailures = closeFailures;
    this.thrashWarnings = thrashWarnings;
    this.recommendedCapacity = recommendedCapacity;
    this.entries = entries;
    this.leasedEntries = leasedEntries;
    this.openFds = openFds;
    this.capacity = capacity;
    this.fdBudget = fdBudget;
  }

  /** Leases served from a cached, valid value. */
  public long hitCount() {
    return hits;
  }

  /** Leases that found no usable value: each either ran a load or waited on one. */
  public long missCount() {
    return misses;
  }

  /** Hits divided by hits plus misses; 1.0 before the first lease. */
  public double hitRate() {
    long total = hits + misses;
    return total == 0 ? 1.0 : (double) hits / total;
  }

  /** Loader calls that returned a value. */
  public long loadSuccessCount() {
    return loads;
  }

  /** Loads that failed: the loader threw, or the fd budget had no room. */
  public long loadFailureCount() {
    return loadFailures;
  }

  /** Total time spent in loader calls, successful or not, in nanoseconds. */
  public long totalLoadTimeNanos() {
    return totalLoadNanos;
  }

  /** The longest single loader call, in nanoseconds. */
  public long maxLoadTimeNanos() {
    return maxLoadNanos;
  }

  /** Mean loader call time in nanoseconds, or 0 before the first load. */
  public double averageLoadTimeNanos() {
    long n = loads + loadFailures;
    return n == 0 ? 0 : (double) totalLoadNanos / n;
  }

  /** Entries removed for {@code cause}. */
  public long removalCount(RemovalCause cause) {
    return removals.get(cause);
  }

  /** Entries evicted for room: {@link RemovalCause#SIZE} plus {@link RemovalCause#FD_BUDGET}. */
  public long evictionCount() {
    return removalCount(RemovalCause.SIZE) + removalCount(RemovalCause.FD_BUDGET);
  }

  /** Entries closed after the idle expiry. */
  public long expiryCount() {
    return removalCount(RemovalCause.EXPIRED);
  }

  /** Entries removed by invalidate calls or found stale. */
  public long invalidationCount() {
    return removalCount(RemovalCause.INVALIDATED) + removalCount(RemovalCause.STALE);
  }

  /** Every removal count by cause. */
  public Map<RemovalCause, Long> removalCounts() {
    return new EnumMap<>(removals);
  }

  /** Values whose {@code close()} threw. */
  public long closeFailureCount() {
    return closeFailures;
  }

  /** Thrash warnings logged. */
  public long thrashWarningCount() {
    return thrashWarnings;
  }

  /**
   * The capacity the thrash detector last estimated the working set needs, or 0 if it has not seen
   * thrash.
   */
  public int recommendedCapacity() {
    return recommendedCapacity;
  }

  /** Entries in the cache, leased or idle. */
  public int entryCount() {
    return entries;
  }

  /** Entries with at least one open lease. */
  public int leasedEntryCount() {
    return leasedEntries;
  }

  /** Fds held by cached values, by values awaiting close, and reserved by loads in progress. */
  public long openFds() {
    return openFds;
  }

  /** The entry capacity. */
  public int capacity() {
    return capacity;
  }

  /** The fd budget. */
  public long fdBudget() {
    return fdBudget;
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT,
        "entries=%d/%d leased=%d fds=%d/%d hits=%d misses=%d hitRate=%.3f loads=%d"
            + " loadFailures=%d avgLoadMs=%.3f removals=%s closeFailures=%d thrashWarnings=%d",
        entries,
        capacity,
        leasedEntries,
        openFds,
        fdBudget,
        hits,
        misses,
        hitRate(),
        loads,
        loadFailures,
        averageLoadTimeNanos() / 1e6,
        removals,
        closeFailures,
        thrashWarnings);
  }
}
