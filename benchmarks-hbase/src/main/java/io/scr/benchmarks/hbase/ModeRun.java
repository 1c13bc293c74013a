package io.scr.benchmarks.hbase;

/**
 * What one mode measured in one round: PerformanceEvaluation's figures and the counters that say
 * where the bytes came from (deltas over the measured gets). Plain fields: the JSON form of the
 * results.
 */
public final class ModeRun {
  public int round;
  public Mode mode;

  /** {@code uptime}'s one-minute load when the measured gets started. */
  public double load1;

  /** Random gets measured, their latency (µs) and rate. */
  public long gets;

  public double p50;
  public double p99;
  public double p999;
  public double mean;
  public double opsPerSecond;

  /** PerformanceEvaluation's {@code scan} over the whole table: rows per second (0: not run). */
  public double scanRowsPerSecond;

  /** HFile block reads from HDFS by positional read (the RegionServer's FsPReadTime count). */
  public long hdfsPreads;

  /** scr's short-circuit reads and bytes, and reads it handed to stock (ScrClient counters). */
  public long scrReads;

  public long scrBytes;
  public long scrFallbacks;

  /** Block reads and bytes the DataNode served over TCP (DataNodeActivity counters). */
  public long dataNodeReadOps;

  public long dataNodeBytesRead;

  /** HFile block reads from HDFS per measured get: at least 1 unless the mode is the floor. */
  public double hdfsPreadsPerGet() {
    return gets == 0 ? 0 : (double) hdfsPreads / gets;
  }

  /**
   * The share of HDFS bytes read short-circuit by scr, in percent: scr's bytes against scr's plus
   * what the DataNode served over TCP (100 only when the DataNode served nothing; see also {@link
   * #scrFallbacks}).
   */
  public double scrShortCircuitPercent() {
    long all = scrBytes + dataNodeBytesRead;
    return all == 0 ? 0 : 100.0 * scrBytes / all;
  }
}
