package io.scr.core.stats;

import java.util.concurrent.atomic.LongAdder;

/**
 * Short-circuit counters of one DataNode socket path: reads and bytes served from replicas opened
 * through it, replica opens, checksum failures. Held by each open replica, so a read bumps its
 * path's counters without a lookup.
 *
 * <p>Thread-safety: thread-safe; every update is one or two {@link LongAdder} increments (no lock,
 * no allocation). Reads of the totals are sums that may miss increments in flight.
 */
public final class PathCounters {
  private final String path;
  private final LongAdder reads = new LongAdder();
  private final LongAdder bytes = new LongAdder();
  private final LongAdder opens = new LongAdder();
  private final LongAdder checksumFailures = new LongAdder();

  PathCounters(String path) {
    this.path = path;
  }

  /** The socket path these counters belong to. */
  public String path() {
    return path;
  }

  /** Counts one short-circuit read call that returned {@code bytes} (> 0) bytes. */
  public void recordRead(int bytes) {
    reads.increment();
    this.bytes.add(bytes);
  }

  /** Counts one replica opened (fds received) through this path. */
  public void recordOpen() {
    opens.increment();
  }

  /** Counts one checksum mismatch found on a replica opened through this path. */
  public void recordChecksumFailure() {
    checksumFailures.increment();
  }

  /** Short-circuit read calls that returned data. */
  public long reads() {
    return reads.sum();
  }

  /** Bytes returned by short-circuit reads. */
  public long bytes() {
    return bytes.sum();
  }

  /** Replicas opened through this path. */
  public long opens() {
    return opens.sum();
  }

  /** Checksum mismatches on replicas of this path. */
  public long checksumFailures() {
    return checksumFailures.sum();
  }

  @Override
  public String toString() {
    return path
        + ": reads="
        + reads()
        + " bytes="
        + bytes()
        + " opens="
        + opens()
        + " checksumFailures="
        + checksumFailures();
  }
}
