package io.scr.core.stats;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/** One path's health at one moment. Immutable. */
public final class HealthStatus {
  private final String path;
  private final HealthState state;
  private final long inStateNanos;
  private final long deadlineNanos;
  private final Map<HealthState, Long> entered;
  private final long probes;
  private final String lastReason;

  public HealthStatus(
      String path,
      HealthState state,
      long inStateNanos,
      long deadlineNanos,
      Map<HealthState, Long> entered,
      long probes,
      String lastReason) {
    this.path = path;
    this.state = state;
    this.inStateNanos = inStateNanos;
    this.deadlineNanos = deadlineNanos;
    this.entered = entered;
    this.probes = probes;
    this.lastReason = lastReason;
  }

  /** The socket path. */
  public String path() {
    return path;
  }

  /** The state. */
  public HealthState state() {
    return state;
  }

  /** How long it has been in that state (ns). */
  public long inStateNanos() {
    return inStateNanos;
  }

  /** The deadline answers are held to (ns). */
  public long deadlineNanos() {
    return deadlineNanos;
  }

  /** How often the path entered {@code state} since the process started. */
  public long transitionsTo(HealthState state) {
    return entered.get(state);
  }

  /** Every state change since the process started. */
  public long transitions() {
    long n = 0;
    for (long v : entered.values()) {
      n += v;
    }
    return n;
  }

  /** Probes sent while the path was not healthy. */
  public long probes() {
    return probes;
  }

  /** What caused the last change (or the last event of the same kind), or null. */
  public String lastReason() {
    return lastReason;
  }

  @Override
  public String toString() {
    return path
        + " "
        + state.name().toLowerCase(java.util.Locale.ROOT)
        + " for "
        + TimeUnit.NANOSECONDS.toMillis(inStateNanos)
        + " ms (deadline "
        + TimeUnit.NANOSECONDS.toMillis(deadlineNanos)
        + " ms, transitions "
        + transitions()
        + ", probes "
        + probes
        + (lastReason == null ? "" : ", last: " + lastReason)
        + ")";
  }
}
