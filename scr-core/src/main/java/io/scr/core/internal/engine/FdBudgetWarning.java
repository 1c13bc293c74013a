package io.scr.core.internal.engine;

import io.scr.cache.LeaseCacheStats;
import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.ScrKeys;
import io.scr.core.metrics.ProcessFds;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one warning of fd exhaustion: the first read that falls back because the open-replica cache
 * is at its fd budget logs one WARN naming the budget, where it came from and what to raise; later
 * fallbacks for the same reason log again at most once per {@link #INTERVAL_NANOS}, with the count
 * since the last warning. A process at its fd limit must not also flood its log. Every fallback is
 * counted ({@link Engine#fallbackCount(FallbackReason)}) whether or not it is logged.
 *
 * <p>Thread-safety: thread-safe and lock-free; concurrent fallbacks race on one CAS, one wins the
 * right to log.
 */
final class FdBudgetWarning {
  private static final Logger LOG = LoggerFactory.getLogger(Engine.class);

  /** Minimum time between two warnings: 5 minutes, as the cache's thrash warnings. */
  static final long INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(5);

  private final String context;
  private final Ticker ticker;
  private final Supplier<LeaseCacheStats> stats;
  private final AtomicLong suppressed = new AtomicLong();

  /** When the last warning was logged; {@code Long.MIN_VALUE}: never. */
  private final AtomicLong lastWarning = new AtomicLong(Long.MIN_VALUE);

  FdBudgetWarning(String context, Ticker ticker, Supplier<LeaseCacheStats> stats) {
    this.context = context;
    this.ticker = ticker;
    this.stats = stats;
  }

  /** Called once per FD_BUDGET fallback, on the reading thread; true if it logged the warning. */
  boolean fallback() {
    long last = lastWarning.get();
    long now = ticker.read();
    if (last != Long.MIN_VALUE && now - last < INTERVAL_NANOS) {
      suppressed.incrementAndGet();
      return false;
    }
    if (!lastWarning.compareAndSet(last, now)) {
      suppressed.incrementAndGet();
      return false;
    }
    long since = suppressed.getAndSet(0);
    LeaseCacheStats s = stats.get();
    long limit = ProcessFds.softLimit();
    LOG.warn(
        "scr engine {}: a read fell back to the stock path because the open-replica cache is at"
            + " its fd budget ({} of {} fds held by {} replicas, {} of them in use{}); the process"
            + " fd limit (RLIMIT_NOFILE) is {}. Raise {} or the fd limit (ulimit -n), from which"
            + " the default budget is derived. Further such fallbacks are counted (reason"
            + " FD_BUDGET) and logged at most every 5 minutes",
        context,
        s.openFds(),
        s.fdBudget(),
        s.entryCount(),
        s.leasedEntryCount(),
        since > 0 ? "; " + since + " more fallbacks since the last warning" : "",
        limit < 0 ? "unknown" : Long.toString(limit),
        ScrKeys.CACHE_FD_BUDGET.name());
    return true;
  }

  /** Fallbacks not logged since the last warning. */
  long suppressedSinceLastWarning() {
    return suppressed.get();
  }
}
