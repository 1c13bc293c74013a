package io.scr.benchmarks.read;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A sequential scan with 1 MiB reads (Spark and MapReduce input, HBase compactions), page cache
 * warm, through every {@link ReadPathType}: stateful {@code read(byte[], int, int)} calls on one
 * stream, starting over at the end of the file. Score: µs per 1 MiB read (so MiB/s is 10^6 /
 * score). Targets: {@code SCR_FILESYSTEM} at least 0.8x the throughput of {@code RAW_PREAD}; {@code
 * SCR_FILESYSTEM_MAPPED} (mapped reads) at least 0.9x.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(1)
public class ScanBenchmark {
  static final int BLOCK_SIZE = 8 << 20;
  static final int BLOCKS = 4;
  static final int READ = 1 << 20;
  private static final String FILE = "/bench/scan";

  @Param({
    "RAW_PREAD",
    "STOCK_SCR_DEFAULT",
    "STOCK_SCR_HBASE",
    "STOCK_SCR_TUNED",
    "STOCK_TCP",
    "SCR_ACCESSOR",
    "SCR_FILESYSTEM",
    "SCR_ACCESSOR_SHIM",
    "SCR_FILESYSTEM_SHIM",
    "SCR_FILESYSTEM_MAPPED"
  })
  ReadPathType path;

  private BenchFile file;
  private final ReadPathType.Buffer buf = new ReadPathType.Buffer(READ);

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    file = BenchFile.create(path, FILE, BLOCK_SIZE, BLOCKS, c -> {}, c -> {});
    // One checked pass of the stateful path too: the scan must return the file's bytes in order.
    for (int i = 0; i < BLOCKS * (BLOCK_SIZE / READ); i++) {
      file.check(file.reader.scan(buf), buf);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (file != null) {
      file.close();
    }
  }

  @Benchmark
  public byte scan1m() throws IOException {
    file.reader.scan(buf);
    return buf.array()[READ - 1];
  }
}
