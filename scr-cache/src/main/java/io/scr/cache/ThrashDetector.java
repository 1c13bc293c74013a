package io.scr.cache;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Detects a cache that is smaller than its working set and says, rate-limited, what capacity the
 * working set needs.
 *
 * <p>Once per window (on the injected ticker) it compares the counters' deltas. The window thrashes
 * when all of these hold:
 *
 * <ol>
 *   <li>entries were evicted for size, so the cache is at capacity;
 *   <li>at least half of them were <em>young</em>: evicted less than the idle expiry after they
 *       were loaded, i.e. before a healthy cache would have let them expire (stock's "the cleaner
 *       purged nothing, every check-in purged one");
 *   <li>the hit rate fell since the previous window, or is below 90%.
 * </ol>
 *
 * <p>The working set estimate is {@code min(capacity / hitRate, distinctMissedKeys + min(capacity,
 * hits))}: the first is exact for uniform access under LRU; the second counts the distinct keys the
 * window missed (a {@link DistinctCounter}) plus at most the keys it hit, which were cached. A
 * cyclic scan over {@code W} keys, where every access misses, gives {@code W}. The recommendation
 * adds 10% headroom.
 *
 * <p><b>Thread-safety.</b> {@link #evaluate} and the two getters are synchronized on this detector;
 * {@code evaluate} runs from maintenance ({@code cleanUp}, any thread), never on the lease path.
 * Two things are on the lease path and take no lock: the miss path offers the key's hash to {@code
 * missedKeys} (a lock-free {@link DistinctCounter}), and a size eviction, which can run on a
 * releasing or loading thread, asks {@link #isYoung} (reads only final fields).
 */
final class ThrashDetector {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseCache.class);

  /** The counters a window reads, cumulative since the cache was created. */
  static final class Counts {
    final long hits;
    final long misses;
    final long sizeEvictions;
    final long youngSizeEvictions;

    Counts(long hits, long misses, long sizeEvictions, long youngSizeEvictions) {
      this.hits = hits;
      this.misses = misses;
      this.sizeEvictions = sizeEvictions;
      this.youngSizeEvictions = youngSizeEvictions;
    }
  }

  private final String name;
  private final String capacityKey;
  private final long windowNanos;
  private final long warnIntervalNanos;
  private final long idleExpiryNanos;
  private final int typicalFdCost;
  private final long fdLimit;

  /** Distinct keys missed in the current window; offered from the miss path without a lock. */
  final DistinctCounter missedKeys;

  @GuardedBy("this")
  private boolean started;

  @GuardedBy("this")
  private long windowStart;

  @GuardedBy("this")
  private Counts last = new Counts(0, 0, 0, 0);

  @GuardedBy("this")
  private double lastHitRate = 1.0;

  @GuardedBy("this")
  private boolean warned;

  @GuardedBy("this")
  private long lastWarning;

  @GuardedBy("this")
  private long warnings;

  @GuardedBy("this")
  private int recommended;

  ThrashDetector(LeaseCacheConfig config, LeaseCacheConfig.Sizing sizing) {
    this.name = config.name();
    this.capacityKey = config.capacityKey();
    this.windowNanos = config.thrashWindow().toNanos();
    this.warnIntervalNanos = config.thrashWarningInterval().toNanos();
    this.idleExpiryNanos = config.idleExpiry().toNanos();
    this.typicalFdCost = config.typicalFdCost();
    this.fdLimit = sizing.fdLimit();
    this.missedKeys = new DistinctCounter(sizing.capacity());
  }

  /** Whether an entry loaded at {@code loadedAt} and evicted at {@code now} was evicted young. */
  boolean isYoung(long loadedAt, long now) {
    return now - loadedAt < idleExpiryNanos;
  }

  /** Closes the window if it is over; returns true if it thrashed. */
  synchronized boolean evaluate(long now, Counts c, int capacity) {
    if (!started) {
      started = true;
      windowStart = now;
      last = c;
      missedKeys.reset();
      return false;
    }
    if (now - windowStart < windowNanos) {
      return false;
    }
    long hits = c.hits - last.hits;
    long misses = c.misses - last.misses;
    long evicted = c.sizeEvictions - last.sizeEvictions;
    long young = c.youngSizeEvictions - last.youngSizeEvictions;
    long window = now - windowStart;
    double hitRate = hits + misses == 0 ? 1.0 : (double) hits / (hits + misses);
    boolean thrashing =
        evicted > 0 && young * 2 >= evicted && (hitRate < lastHitRate || hitRate < 0.9);
    if (thrashing) {
      double byRate = hitRate > 0 ? capacity / hitRate : Double.MAX_VALUE;
      double seen = missedKeys.estimate() + (double) Math.min(capacity, hits);
      double workingSet = Math.min(byRate, seen);
      recommended =
          (int)
              Math.min(Integer.MAX_VALUE - 8, Math.max(capacity + 1, Math.ceil(workingSet * 1.1)));
      if (!warned || now - lastWarning >= warnIntervalNanos) {
        warned = true;
        lastWarning = now;
        warnings++;
        LOG.warn(message(capacity, evicted, young, window, hitRate, (long) workingSet));
      }
    }
    lastHitRate = hitRate;
    last = c;
    windowStart = now;
    missedKeys.reset();
    return thrashing;
  }

  @GuardedBy("this")
  private String message(
      int capacity, long evicted, long young, long window, double hitRate, long workingSet) {
    String s =
        String.format(
            Locale.ROOT,
            "%s is thrashing: it is full at capacity %d and in the last %d s evicted %d entries,"
                + " %d of them less than the idle expiry (%d s) after loading them; hit rate"
                + " %.1f%%. The observed working set is about %d entries: set %s to at least %d"
                + " (about %d fds).",
            name,
            capacity,
            TimeUnit.NANOSECONDS.toSeconds(window),
            evicted,
            young,
            TimeUnit.NANOSECONDS.toSeconds(idleExpiryNanos),
            hitRate * 100,
            workingSet,
            capacityKey,
            recommended,
            (long) recommended * typicalFdCost);
    if (fdLimit > 0 && (long) recommended * typicalFdCost > fdLimit / 2) {
      s += " That is more than half the process fd limit (" + fdLimit + "): raise ulimit -n too.";
    }
    return s;
  }

  synchronized long warnings() {
    return warnings;
  }

  synchronized int recommendedCapacity() {
    return recommended;
  }
}
