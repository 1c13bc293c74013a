package org.apache.hadoop.hdfs;

/** Test access to {@code DFSClient.getHedgedReadMetrics()}, which is package-private. */
public final class HedgedReadCounts {
  private HedgedReadCounts() {}

  /** Hedged reads started (stock counts them process-wide). */
  public static long started(DFSClient client) {
    return client.getHedgedReadMetrics().getHedgedReadOps();
  }
}
