package io.scr.core.stats;

import java.util.concurrent.TimeUnit;

/** One path's counters for one failure class. Immutable. */
public final class BackoffStatus {
  private final String path;
  private final FailureClass failureClass;
  private final long failures;
  private final long consecutiveFailures;
  private final long remainingBackoffNanos;
  private final String lastReason;

  public BackoffStatus(
      String path,
      FailureClass failureClass,
      long failures,
      long consecutiveFailures,
      long remainingBackoffNanos,
      String lastReason) {
    this.path = path;
    this.failureClass = failureClass;
    this.failures = failures;
    this.consecutiveFailures = consecutiveFailures;
    this.remainingBackoffNanos = remainingBackoffNanos;
    this.lastReason = lastReason;
  }

  /** The socket path. */
  public String path() {
    return path;
  }

  /** The failure class. */
  public FailureClass failureClass() {
    return failureClass;
  }

  /** Failures of this class since start. */
  public long failures() {
    return failures;
  }

  /** Failures of this class since the last success. */
  public long consecutiveFailures() {
    return consecutiveFailures;
  }

  /** Nanoseconds until the backoff ends; 0 when not backing off. */
  public long remainingBackoffNanos() {
    return remainingBackoffNanos;
  }

  /** The last failure's reason, or null if none. */
  public String lastReason() {
    return lastReason;
  }

  @Override
  public String toString() {
    return path
        + " "
        + failureClass
        + ": failures="
        + failures
        + " consecutive="
        + consecutiveFailures
        + " backoffRemainingMs="
        + TimeUnit.NANOSECONDS.toMillis(remainingBackoffNanos)
        + (lastReason == null ? "" : " last=" + lastReason);
  }
}
