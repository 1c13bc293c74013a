package io.scr.core.metrics;

import java.io.Closeable;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs a {@link SummaryLine} for every interval at INFO on logger {@value #LOGGER}, from one daemon
 * thread per client context ({@code scr-summary-<context>}), so the state of short-circuit reads is
 * visible in a RegionServer's log without TRACE. The interval is {@code
 * scr.metrics.summary.interval.seconds}; 0 means no reporter (and no thread).
 *
 * <p>Thread-safety: {@link #close()} may be called from any thread and is idempotent; the previous
 * snapshot is taken by the constructor, before the schedule starts, and from then on touched only
 * by the reporter's own thread. A failing snapshot is logged at WARN and the next interval starts
 * afresh; it never stops the schedule.
 */
public final class SummaryReporter implements Closeable {
  /** The logger name operators filter on. */
  public static final String LOGGER = "io.scr.summary";

  private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

  private final Supplier<ClientSnapshot> source;
  private final Consumer<String> sink;
  private final ScheduledExecutorService executor;
  private ClientSnapshot previous;

  private SummaryReporter(
      String context, Supplier<ClientSnapshot> source, Consumer<String> sink, Duration interval) {
    this.source = Objects.requireNonNull(source, "source");
    this.sink = Objects.requireNonNull(sink, "sink");
    if (interval.isZero() || interval.isNegative()) {
      throw new IllegalArgumentException("summary interval must be > 0: " + interval);
    }
    this.executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "scr-summary-" + context);
              t.setDaemon(true);
              return t;
            });
    // Written before scheduling (happens-before the first tick); then only the reporter thread.
    this.previous = source.get();
    long nanos = interval.toNanos();
    executor.scheduleAtFixedRate(this::tick, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Starts logging a line for {@code source} every {@code intervalSeconds} to {@value #LOGGER};
   * null when the interval is 0 or less (switched off).
   */
  public static SummaryReporter start(
      String context, Supplier<ClientSnapshot> source, int intervalSeconds) {
    if (intervalSeconds <= 0) {
      return null;
    }
    return new SummaryReporter(context, source, LOG::info, Duration.ofSeconds(intervalSeconds));
  }

  /** As {@link #start}, with any interval and line consumer (tests). */
  static SummaryReporter start(
      String context, Supplier<ClientSnapshot> source, Consumer<String> sink, Duration interval) {
    return new SummaryReporter(context, source, sink, interval);
  }

  private void tick() {
    try {
      ClientSnapshot now = source.get();
      if (previous != null) {
        sink.accept(SummaryLine.format(previous, now));
      }
      previous = now;
    } catch (RuntimeException | Error e) { // a throwing tick would cancel every later one
      previous = null; // the next tick starts a fresh interval
      LOG.warn("scr summary failed: {}", e.toString());
    }
  }

  /** Stops the reporter thread. Idempotent. */
  @Override
  public void close() {
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
