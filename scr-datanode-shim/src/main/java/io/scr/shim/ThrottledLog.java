package io.scr.shim;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;

/**
 * Logs a failure with its stack trace at most once a minute and counts the ones it left out, so a
 * client that triggers the same failure in a loop cannot flood the DataNode's log (or make every
 * request pay for a log write), while the first occurrence is never lost.
 *
 * <p>Thread-safe: one compare-and-set decides which caller logs.
 */
final class ThrottledLog {
  static final long INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final AtomicLong nextNanos = new AtomicLong(Long.MIN_VALUE);
  private final AtomicLong suppressed = new AtomicLong();
  private final Ticker ticker;

  /** A log throttled on {@code ticker}'s minutes. */
  ThrottledLog(Ticker ticker) {
    this.ticker = ticker;
  }

  /** Logs {@code message} and {@code t} at ERROR, unless one was logged less than a minute ago. */
  void log(Logger log, String message, Throwable t) {
    try {
      long left = claim();
      if (left >= 0) {
        log.error("{} ({} similar failures not logged in the last minute)", message, left, t);
      } else {
        log.debug("{}: {}", message, t.toString());
      }
    } catch (Throwable logFailed) {
      // Under an OutOfMemoryError logging can fail too; the caller's recovery must still run.
    }
  }

  /** Logs {@code message} at WARN, unless one was logged less than a minute ago. */
  void warn(Logger log, String message) {
    long left = claim();
    if (left >= 0) {
      log.warn("{} ({} similar events not logged in the last minute)", message, left);
    } else {
      log.debug(message);
    }
  }

  /** The number of messages suppressed since the last one, or -1 if this one is suppressed. */
  private long claim() {
    long now = ticker.read();
    long next = nextNanos.get();
    if ((next == Long.MIN_VALUE || now - next >= 0)
        && nextNanos.compareAndSet(next, now + INTERVAL_NANOS)) {
      return suppressed.getAndSet(0);
    }
    suppressed.incrementAndGet();
    return -1;
  }
}
