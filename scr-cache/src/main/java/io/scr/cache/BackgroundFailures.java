package io.scr.cache;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Failures of a cache's background tasks: logged with the stack trace at the first of a streak,
 * then at most once a minute as one line; the tasks keep running either way (a closer that died on
 * an {@code Error} would leave every later close to the readers' threads).
 *
 * <p>Thread-safety: every field is guarded by this object's monitor (an injected scheduler may run
 * tasks on several threads).
 */
final class BackgroundFailures {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseCache.class);

  /** Failures of a streak are logged at most this often after the first. */
  private static final long LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final String name;
  private final Ticker ticker;

  @GuardedBy("this")
  private long inARow;

  @GuardedBy("this")
  private long lastLoggedNanos;

  @GuardedBy("this")
  private long notLogged;

  BackgroundFailures(String name, Ticker ticker) {
    this.name = name;
    this.ticker = ticker;
  }

  synchronized void failed(Throwable e) {
    long now = ticker.read();
    if (inARow++ == 0) {
      LOG.error("{}: closer failed; it keeps running (repeats are logged once a minute)", name, e);
      lastLoggedNanos = now;
    } else if (now - lastLoggedNanos >= LOG_INTERVAL_NANOS) {
      LOG.error(
          "{}: closer failed again: {} in a row, {} not logged; latest: {}",
          name,
          inARow,
          notLogged,
          e.toString());
      lastLoggedNanos = now;
      notLogged = 0;
    } else {
      notLogged++;
    }
  }

  synchronized void succeeded() {
    if (inARow > 0) {
      LOG.info("{}: closer works again after {} failures", name, inARow);
      inARow = 0;
      notLogged = 0;
    }
  }
}
