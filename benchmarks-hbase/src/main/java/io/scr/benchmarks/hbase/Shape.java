package io.scr.benchmarks.hbase;

/**
 * The data set and the work of one benchmark run: rows of {@code valueSize} bytes in one region,
 * HFiles in HDFS blocks of {@code blockSize}, and per mode {@code warmupGets} random gets before
 * {@code gets} measured ones.
 */
final class Shape {
  final String name;
  final int rows;
  final int valueSize;
  final long blockSize;
  final int warmupGets;
  final int gets;
  final int rounds;

  /** The target every scr mode's p50 and p99 must meet, as a ratio to stock short-circuit. */
  final double target;

  /** Children start with the C1 compiler only and small heaps: quick, for checks, never timed. */
  final boolean quickStart;

  /**
   * A mode runs in the HBase process already running when that process reads as the mode does
   * ({@link BenchCluster#hbaseServes}): the load's process measures stock TCP, stock
   * short-circuit's the floor. Fewer restarts for checks; a timed shape starts a fresh process for
   * every mode, so no mode inherits another's JIT, heap or caches.
   */
  final boolean shareProcesses;

  Shape(
      String name,
      int rows,
      int valueSize,
      long blockSize,
      int warmupGets,
      int gets,
      int rounds,
      double target,
      boolean quickStart,
      boolean shareProcesses) {
    this.name = name;
    this.rows = rows;
    this.valueSize = valueSize;
    this.blockSize = blockSize;
    this.warmupGets = warmupGets;
    this.gets = gets;
    this.rounds = rounds;
    this.target = target;
    this.quickStart = quickStart;
    this.shareProcesses = shareProcesses;
  }

  /** 200k rows of 1 KiB, HDFS's default 128 MiB blocks; target 0.7x stock short-circuit. */
  static Shape defaultShape() {
    return new Shape("default", 200_000, 1024, 128L << 20, 20_000, 50_000, 3, 0.7, false, false);
  }

  /**
   * The same rows in 512 KiB blocks: about 400 blocks, more than stock's short-circuit replica
   * cache holds (256); target 0.5x stock short-circuit.
   */
  static Shape odyssey() {
    return new Shape("odyssey", 200_000, 1024, 512L << 10, 20_000, 50_000, 3, 0.5, false, false);
  }

  /**
   * A few thousand rows in 256 KiB blocks, one round, modes sharing HBase processes where they can:
   * every mode runs, nothing is timed.
   */
  static Shape smoke() {
    return new Shape("smoke", 3_000, 1024, 256L << 10, 300, 1_000, 1, 0.7, true, true);
  }

  Shape with(int rows, int warmupGets, int gets, int rounds, long blockSize) {
    return new Shape(
        name,
        rows,
        valueSize,
        blockSize,
        warmupGets,
        gets,
        rounds,
        target,
        quickStart,
        shareProcesses);
  }
}
