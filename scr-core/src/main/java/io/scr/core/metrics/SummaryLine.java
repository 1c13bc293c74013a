package io.scr.core.metrics;

import io.scr.cache.RemovalCause;
import io.scr.core.FallbackReason;
import io.scr.core.ScrKeys;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Formats the one-line summary of an interval from two {@link ClientSnapshot}s of one engine, e.g.
 *
 * <pre>
 * scr[default]: hit 99.2%, evictions 0/s, fds 1843/32768 (cache 1200/15360), short-circuit
 * 1.9 GB/s (41k reads/s), fallback 0 (—)
 * </pre>
 *
 * (one line; wrapped here). Rates and the hit rate are over the interval; fds are now. Problems are
 * appended only when present: paths backing off (with the class, the remaining time and the last
 * reason), local DataNodes that are not healthy or changed health in the interval (e.g. {@code
 * DataNode /var/run/dn.sock unresponsive for 8200 ms (1 health changes)}), checksum failures, slot
 * allocation timeouts, and a cache the thrash detector found too small (with the capacity to set).
 *
 * <p>Stateless and thread-safe.
 */
public final class SummaryLine {
  private SummaryLine() {}

  /** The line for the interval from {@code prev} to {@code cur} (same engine, prev first). */
  public static String format(ClientSnapshot prev, ClientSnapshot cur) {
    double seconds = Math.max(1e-9, (cur.takenAtNanos - prev.takenAtNanos) / 1e9);
    StringBuilder sb = new StringBuilder(160);
    sb.append("scr[").append(cur.context).append("]: ");

    long hits = cur.cache.hitCount() - prev.cache.hitCount();
    long misses = cur.cache.missCount() - prev.cache.missCount();
    sb.append("hit ");
    if (hits + misses == 0) {
      sb.append('—');
    } else {
      sb.append(String.format(Locale.ROOT, "%.1f%%", 100.0 * hits / (hits + misses)));
    }
    long evictions = delta(prev, cur, RemovalCause.SIZE) + delta(prev, cur, RemovalCause.FD_BUDGET);
    sb.append(", evictions ").append(rate(evictions / seconds)).append("/s");
    sb.append(", fds ")
        .append(known(cur.processOpenFds))
        .append('/')
        .append(known(cur.processFdLimit))
        .append(" (cache ")
        .append(cur.cache.openFds())
        .append('/')
        .append(cur.cache.fdBudget())
        .append(')');
    sb.append(", short-circuit ")
        .append(bytesPerSecond((cur.bytes - prev.bytes) / seconds))
        .append(" (")
        .append(rate((cur.reads - prev.reads) / seconds))
        .append(" reads/s)");

    List<String> reasons = new ArrayList<>();
    long fallbacks = 0;
    for (Map.Entry<FallbackReason, Long> e : cur.fallbacks.entrySet()) {
      long d = e.getValue() - prev.fallbacks.getOrDefault(e.getKey(), 0L);
      if (d > 0) {
        fallbacks += d;
        reasons.add(e.getKey() + " " + d);
      }
    }
    sb.append(", fallback ").append(fallbacks).append(" (");
    sb.append(reasons.isEmpty() ? "—" : String.join(", ", reasons)).append(')');

    for (BackoffStatus s : cur.backoff) {
      if (s.remainingBackoffNanos() > 0) {
        sb.append(", backing off ")
            .append(s.path())
            .append(' ')
            .append(s.failureClass())
            .append(' ')
            .append(TimeUnit.NANOSECONDS.toSeconds(s.remainingBackoffNanos() + 999_999_999L))
            .append(" s");
        if (s.lastReason() != null) {
          sb.append(" (").append(s.lastReason()).append(')');
        }
      }
    }
    for (HealthStatus h : cur.health) {
      long changes = h.transitions() - transitionsOf(prev, h.path());
      if (h.state() != HealthState.HEALTHY || changes > 0) {
        sb.append(", DataNode ")
            .append(h.path())
            .append(' ')
            .append(h.state().name().toLowerCase(Locale.ROOT));
        if (h.state() != HealthState.HEALTHY) {
          sb.append(" for ").append(TimeUnit.NANOSECONDS.toMillis(h.inStateNanos())).append(" ms");
        }
        if (changes > 0) {
          sb.append(" (").append(changes).append(" health changes)");
        }
      }
    }
    long checksum = cur.checksumFailures - prev.checksumFailures;
    if (checksum > 0) {
      sb.append(", checksum failures ").append(checksum);
    }
    ScrClientMetrics.SlotTotals was = new ScrClientMetrics.SlotTotals(prev.slotPools);
    ScrClientMetrics.SlotTotals now = new ScrClientMetrics.SlotTotals(cur.slotPools);
    if (now.timeouts > was.timeouts) {
      sb.append(", slot allocation timeouts ")
          .append(now.timeouts - was.timeouts)
          .append(" (wait p99 ")
          .append(TimeUnit.NANOSECONDS.toMicros(now.waitP99Nanos))
          .append(" µs)");
    }
    int recommended = cur.cache.recommendedCapacity();
    if (recommended > cur.cache.capacity()) {
      sb.append(", cache thrashing: working set needs ~")
          .append(recommended)
          .append(" replicas, capacity ")
          .append(cur.cache.capacity())
          .append(" (raise " + ScrKeys.CACHE_CAPACITY.name() + " and ulimit -n)");
    }
    return sb.toString();
  }

  private static long transitionsOf(ClientSnapshot prev, String path) {
    for (HealthStatus h : prev.health) {
      if (h.path().equals(path)) {
        return h.transitions();
      }
    }
    return 0;
  }

  private static long delta(ClientSnapshot prev, ClientSnapshot cur, RemovalCause c) {
    return cur.cache.removalCount(c) - prev.cache.removalCount(c);
  }

  private static String known(long v) {
    return v < 0 ? "?" : Long.toString(v);
  }

  static String rate(double perSecond) {
    if (perSecond >= 10_000) {
      return String.format(Locale.ROOT, "%.0fk", perSecond / 1000);
    }
    if (perSecond >= 10 || perSecond == 0) {
      return String.format(Locale.ROOT, "%.0f", perSecond);
    }
    return String.format(Locale.ROOT, "%.1f", perSecond);
  }

  static String bytesPerSecond(double bps) {
    String[] units = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
    int u = 0;
    while (bps >= 1000 && u < units.length - 1) {
      bps /= 1000;
      u++;
    }
    return String.format(Locale.ROOT, u == 0 ? "%.0f %s" : "%.1f %s", bps, units[u]);
  }
}
