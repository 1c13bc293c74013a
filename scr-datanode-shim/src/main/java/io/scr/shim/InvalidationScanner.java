package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.shm.internal.FailureLog;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the invalidation scan ({@link SegmentRegistry#invalidateStale}) on the plugin's control
 * thread, again and again until {@link #stop()}: every {@code intervalMs}, or after {@value
 * #SCAN_DUTY_FACTOR} times the last scan's duration if that is longer (with very many registered
 * slots the scan then takes at most ~10% of one core instead of running back to back).
 *
 * <p>One scan serves every client, so nothing a scan meets may end the loop: a {@code Throwable}
 * (an {@code InternalError} from a faulting mapping, an {@code OutOfMemoryError}, a dataset bug) is
 * counted ({@code invalidation_scan_failures}), logged once per streak (then once a minute, {@link
 * FailureLog}), and the next scan is scheduled regardless, in a {@code finally}.
 *
 * <p>Time and scheduling are injected ({@link Ticker}, {@link Scheduler}): the plugin passes the
 * system ticker and its control thread, tests a fake ticker and a scheduler they step by hand.
 *
 * <p>Concurrency: scans run one at a time (the plugin's scheduler is its single control thread);
 * {@code stop} may be called from any thread; {@code stopped} is guarded by this object's monitor.
 */
final class InvalidationScanner {
  private static final Logger LOG = LoggerFactory.getLogger(InvalidationScanner.class);
  private static final String WHAT = "scr shim invalidation scan";

  /** The scan waits at least this many times its own duration before running again. */
  static final long SCAN_DUTY_FACTOR = 9;

  private final SegmentRegistry registry;
  private final Supplier<SegmentRegistry.ReplicaLookup> lookup;

  /** Runs a scan after a delay; the plugin's single control thread. */
  @FunctionalInterface
  interface Scheduler {
    /** Runs {@code scan} once after {@code delayMs}; throws if shut down. */
    void schedule(Runnable scan, long delayMs) throws RejectedExecutionException;
  }

  private final Scheduler control;
  private final Ticker ticker;
  private final ShimMetrics metrics;
  private final long intervalMs;

  /** Touched by the control thread only (one scan at a time). */
  private final FailureLog failures = new FailureLog();

  @GuardedBy("this")
  private boolean stopped;

  /**
   * @param lookup the replica lookup of the DataNode's dataset, or null while it has none
   */
  InvalidationScanner(
      SegmentRegistry registry,
      Supplier<SegmentRegistry.ReplicaLookup> lookup,
      Scheduler control,
      Ticker ticker,
      ShimMetrics metrics,
      long intervalMs) {
    this.registry = registry;
    this.ticker = ticker;
    this.lookup = lookup;
    this.control = control;
    this.metrics = metrics;
    this.intervalMs = intervalMs;
  }

  /** Schedules the first scan one interval from now. */
  void start() {
    schedule(intervalMs);
  }

  /** No further scan is scheduled (one already running finishes). */
  synchronized void stop() {
    stopped = true;
  }

  private synchronized void schedule(long delayMs) {
    if (stopped) {
      return;
    }
    try {
      control.schedule(this::scanAndReschedule, delayMs);
    } catch (RejectedExecutionException e) {
      stopped = true; // the plugin shut the control thread down
    }
  }

  private void scanAndReschedule() {
    long start = ticker.read();
    long next = intervalMs;
    try {
      scanOnce();
      long tookMs = TimeUnit.NANOSECONDS.toMillis(ticker.read() - start);
      next = Math.max(intervalMs, tookMs * SCAN_DUTY_FACTOR);
    } catch (Throwable t) {
      // Caught whole: an Error ending this task would stop invalidation for every client for the
      // rest of the DataNode's life, and clients would keep reading replicas that are gone.
      try {
        metrics.invalidationScanFailures.increment();
        failures.failed(LOG, WHAT, t, ticker.read(), TimeUnit.MILLISECONDS.toNanos(intervalMs));
      } catch (Throwable logFailed) {
        // under an OutOfMemoryError even logging may fail; the rescheduling below must still run
      }
    } finally {
      schedule(next);
    }
  }

  /** One scan; throws whatever the registry or the dataset throws. */
  void scanOnce() {
    SegmentRegistry.ReplicaLookup l = lookup.get();
    if (l == null) {
      return; // the DataNode has no dataset (yet)
    }
    int n = registry.invalidateStale(l);
    failures.succeeded(LOG, WHAT);
    if (n > 0) {
      LOG.info("Invalidated {} short-circuit slots of deleted, moved or re-stamped replicas", n);
    }
  }
}
