package io.scr.core.hdfs.conformance;

import org.apache.hadoop.util.VersionInfo;

/**
 * Whether the stock libhadoop the test build provides can serve this Hadoop's classes. The build's
 * only source of stock libhadoop is trino's 3.3.5 build ({@code
 * io.trino.hadoop:hadoop-apache:3.3.5-3}, unpacked into {@code target/native}); it loads and works
 * with Hadoop 3.3 and 3.4 classes, but under Hadoop 3.5.0 classes it crashes the JVM in {@code
 * DomainSocket.receiveFileDescriptors0}, which would take the whole test JVM down. Paths that need
 * it (stock short-circuit reads on either side: modes A and C) are skipped there with {@link
 * #REASON}; scr's own paths need no libhadoop and still run (mode B).
 */
public final class StockLibhadoop {
  /** Why stock-libhadoop paths are skipped on Hadoop 3.5+. */
  public static final String REASON =
      "stock libhadoop in tests is trino's 3.3.5 build (io.trino.hadoop:hadoop-apache:3.3.5-3),"
          + " which crashes the JVM in DomainSocket.receiveFileDescriptors0 under Hadoop 3.5+"
          + " classes; stock short-circuit paths (modes A and C) need a libhadoop built for this"
          + " Hadoop. scr's own paths need none and run (mode B).";

  private StockLibhadoop() {}

  /** True when this JVM runs Hadoop 3.5 or later, where the test libhadoop must not be used. */
  public static boolean unusable() {
    return atLeast(VersionInfo.getVersion(), 3, 5);
  }

  /** Whether {@code version} ({@code major.minor[.patch][-suffix]}) is at least major.minor. */
  static boolean atLeast(String version, int major, int minor) {
    String[] parts = version.split("[.-]");
    try {
      int ma = Integer.parseInt(parts[0]);
      int mi = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
      return ma > major || (ma == major && mi >= minor);
    } catch (NumberFormatException e) {
      throw new IllegalStateException("cannot parse the Hadoop version '" + version + "'", e);
    }
  }
}
