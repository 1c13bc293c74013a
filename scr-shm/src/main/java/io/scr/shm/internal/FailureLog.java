package io.scr.shm.internal;

import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/**
 * The failures of one background loop, logged so that a loop which keeps failing (say an {@code
 * OutOfMemoryError} on every pass) neither dies silently nor floods the log: the first failure of a
 * streak is logged with its stack trace, later ones at most once per {@link #INTERVAL_NANOS} as one
 * line with how many were not logged; the loop pauses between attempts, doubling from 10 ms up to a
 * cap, so it keeps going without spinning.
 *
 * <p>Shared by the background loops of scr-shm (the slot pool's refill and maintenance) and
 * scr-core (the segment watcher). Not thread-safe: each instance belongs to the one thread that
 * runs its loop.
 */
public final class FailureLog {
  public static final long INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);
  private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private long inARow;
  private long notLogged;
  private long lastLoggedNanos;
  private long pauseNanos = FIRST_PAUSE_NANOS;

  /**
   * Records one failure of the loop {@code what} and logs it if due.
   *
   * @return how long the loop should pause before it tries again, in nanoseconds
   */
  public long failed(Logger log, String what, Throwable t, long nowNanos, long maxPauseNanos) {
    if (inARow++ == 0) {
      log.error(
          "{} failed; it keeps running and retries (repeats are logged once a minute)", what, t);
      lastLoggedNanos = nowNanos;
      pauseNanos = Math.min(FIRST_PAUSE_NANOS, maxPauseNanos);
    } else if (nowNanos - lastLoggedNanos >= INTERVAL_NANOS) {
      log.error(
          "{} failed again: {} failures in a row, {} not logged since the last line; latest: {}",
          what,
          inARow,
          notLogged,
          t.toString());
      lastLoggedNanos = nowNanos;
      notLogged = 0;
    } else {
      notLogged++;
    }
    long pause = pauseNanos;
    pauseNanos = Math.min(maxPauseNanos, pauseNanos * 2);
    return pause;
  }

  /** The loop made progress: the next failure starts a new streak (and is logged in full). */
  public void succeeded(Logger log, String what) {
    if (inARow > 0) {
      log.info("{} works again after {} failures in a row", what, inARow);
      inARow = 0;
      notLogged = 0;
    }
  }

  /** Failures in the current streak (0 when the last pass worked). */
  public long inARow() {
    return inARow;
  }
}
