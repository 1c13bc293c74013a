package io.scr.shm;

import java.io.IOException;

/**
 * {@link SlotPool#allocate()} found no free slot within the pool's maximum allocation wait. The
 * message says how long it waited, the pool's state, and which setting to raise; the reader goes on
 * without a slot (stock behaviour) or falls back to the stock path.
 *
 * <p>Stackless: exhaustion comes in bursts under overload, and where the caller was says nothing
 * about why the pool ran dry (the message does); the cause, if any, is the last fetch failure.
 */
public final class SlotPoolExhaustedException extends IOException {
  private static final long serialVersionUID = 1L;

  private final long waitedNanos;

  SlotPoolExhaustedException(String message, long waitedNanos, Throwable lastFetchFailure) {
    super(message, lastFetchFailure);
    this.waitedNanos = waitedNanos;
  }

  /** No stack trace: see the class comment. */
  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }

  /** How long the caller waited, in nanoseconds. */
  public long waitedNanos() {
    return waitedNanos;
  }
}
