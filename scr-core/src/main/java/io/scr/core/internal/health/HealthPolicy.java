package io.scr.core.internal.health;

import io.scr.core.ScrKeys;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;

/**
 * How long a DataNode may take to answer before it is suspected, and how often a DataNode that is
 * not healthy is probed: the deadline is {@code multiplier} times the 99th percentile of its recent
 * normal answer times (those within {@code floor}), no less than {@code floor} and no more than
 * {@code cap}; the floor until enough answers have been seen. A read waits the deadline but no more
 * than the read wait: what a hung DataNode costs a read is bounded apart from how long a DataNode
 * may take before it is judged unresponsive. Immutable.
 */
public final class HealthPolicy {
  private final long floorNanos;
  private final long capNanos;
  private final int multiplier;
  private final long probeIntervalNanos;
  private final long readWaitNanos;

  private HealthPolicy(
      long floorMs, long capMs, int multiplier, long probeIntervalMs, long readWaitMs) {
    if (floorMs <= 0
        || capMs < floorMs
        || multiplier < 1
        || probeIntervalMs <= 0
        || readWaitMs <= 0) {
      throw new IllegalArgumentException(
          ScrKeys.HEALTH_DEADLINE_MIN_MS.name()
              + "="
              + floorMs
              + ", "
              + ScrKeys.HEALTH_DEADLINE_MAX_MS.name()
              + "="
              + capMs
              + ", "
              + ScrKeys.HEALTH_DEADLINE_MULTIPLIER.name()
              + "="
              + multiplier
              + ", "
              + ScrKeys.HEALTH_PROBE_INTERVAL_MS.name()
              + "="
              + probeIntervalMs
              + ", "
              + ScrKeys.HEALTH_READ_WAIT_MAX_MS.name()
              + "="
              + readWaitMs
              + ": the minimum must be positive and at most the maximum, the multiplier at least"
              + " 1, the probe interval and the read wait positive");
    }
    this.floorNanos = TimeUnit.MILLISECONDS.toNanos(floorMs);
    this.capNanos = TimeUnit.MILLISECONDS.toNanos(capMs);
    this.multiplier = multiplier;
    this.probeIntervalNanos = TimeUnit.MILLISECONDS.toNanos(probeIntervalMs);
    this.readWaitNanos = TimeUnit.MILLISECONDS.toNanos(readWaitMs);
  }

  /**
   * A policy of explicit values (ms) whose reads wait the whole deadline.
   *
   * @throws IllegalArgumentException naming the keys when the values do not fit together
   */
  public static HealthPolicy of(long floorMs, long capMs, int multiplier, long probeIntervalMs) {
    return new HealthPolicy(floorMs, capMs, multiplier, probeIntervalMs, capMs);
  }

  /**
   * A policy of explicit values (ms) whose reads wait at most {@code readWaitMs} of the deadline.
   *
   * @throws IllegalArgumentException naming the keys when the values do not fit together
   */
  public static HealthPolicy of(
      long floorMs, long capMs, int multiplier, long probeIntervalMs, long readWaitMs) {
    return new HealthPolicy(floorMs, capMs, multiplier, probeIntervalMs, readWaitMs);
  }

  /** The policy {@code conf}'s {@code scr.client.health.*} keys describe. */
  public static HealthPolicy from(Configuration conf) {
    return of(
        ScrKeys.HEALTH_DEADLINE_MIN_MS.get(conf::get),
        ScrKeys.HEALTH_DEADLINE_MAX_MS.get(conf::get),
        ScrKeys.HEALTH_DEADLINE_MULTIPLIER.get(conf::get),
        ScrKeys.HEALTH_PROBE_INTERVAL_MS.get(conf::get),
        ScrKeys.HEALTH_READ_WAIT_MAX_MS.get(conf::get));
  }

  /** The defaults of the keys. */
  public static HealthPolicy defaults() {
    return from(new Configuration(false));
  }

  /** The deadline for a DataNode whose recent answers have this 99th percentile (-1: unknown). */
  long deadlineNanos(long p99Nanos) {
    if (p99Nanos < 0) {
      return floorNanos;
    }
    long d = p99Nanos > capNanos / multiplier ? capNanos : p99Nanos * multiplier;
    return Math.max(floorNanos, Math.min(capNanos, d));
  }

  /** The shortest deadline, and the slowest answer that counts as a normal one. */
  long floorNanos() {
    return floorNanos;
  }

  /** The longest deadline. */
  long capNanos() {
    return capNanos;
  }

  /** The longest a read waits for an answer, whatever the deadline. */
  long readWaitNanos() {
    return readWaitNanos;
  }

  /** How long after a probe the next one runs while the DataNode is not healthy. */
  long probeIntervalNanos() {
    return probeIntervalNanos;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof HealthPolicy)) {
      return false;
    }
    HealthPolicy p = (HealthPolicy) o;
    return floorNanos == p.floorNanos
        && capNanos == p.capNanos
        && multiplier == p.multiplier
        && probeIntervalNanos == p.probeIntervalNanos
        && readWaitNanos == p.readWaitNanos;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(floorNanos * 31 + capNanos) * 31 + multiplier;
  }

  @Override
  public String toString() {
    return "deadline "
        + multiplier
        + "x p99 in ["
        + TimeUnit.NANOSECONDS.toMillis(floorNanos)
        + ", "
        + TimeUnit.NANOSECONDS.toMillis(capNanos)
        + "] ms, probe every "
        + TimeUnit.NANOSECONDS.toMillis(probeIntervalNanos)
        + " ms, reads wait at most "
        + TimeUnit.NANOSECONDS.toMillis(readWaitNanos)
        + " ms";
  }
}
