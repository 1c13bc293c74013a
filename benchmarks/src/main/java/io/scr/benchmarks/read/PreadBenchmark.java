package io.scr.benchmarks.read;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * Random positional reads with checksums verified (HBase's hot path), page cache warm, through
 * every {@link ReadPathType} in the same run, at 4 KiB and 64 KiB and at 1, 2, 8 and 32 threads
 * (one method per thread count; the report folds them into one table). Score: µs per read, for each
 * thread (so throughput is threads / score).
 *
 * <p>Targets (ratios within one run): at 4 KiB and one thread {@code SCR_FILESYSTEM} takes at most
 * 1.5x the time of {@code RAW_PREAD}, is at least 2.5x faster than {@code STOCK_SCR_TUNED} and 8x
 * faster than {@code STOCK_SCR_HBASE}; two threads give at least 1.7x the one-thread throughput, 32
 * threads at least 0.9x the two-thread throughput; about 0 B/op for {@code SCR_FILESYSTEM} under
 * {@code -prof gc}.
 *
 * <p>The file has {@value #BLOCKS} blocks of {@value #BLOCK_SIZE} bytes, read entirely and checked
 * in setup. Each thread reads its own pre-computed uniform random sequence of offsets, not aligned
 * to checksum chunks; a read may cross a block boundary.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PreadBenchmark {
  static final int BLOCK_SIZE = 4 << 20;
  static final int BLOCKS = 4;
  private static final int SEQUENCE = 1 << 14;
  private static final String FILE = "/bench/pread";

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

  @Param({"4096", "65536"})
  int readSize;

  BenchFile file;
  private final AtomicInteger threadSeeds = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    file = BenchFile.create(path, FILE, BLOCK_SIZE, BLOCKS, c -> {}, c -> {});
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (file != null) {
      file.close();
    }
  }

  /** One benchmark thread's buffer and offsets. */
  @State(Scope.Thread)
  public static class ThreadReads {
    ReadPathType.Buffer buf;
    long[] offsets;
    int next;

    @Setup(Level.Trial)
    public void setUp(PreadBenchmark bench) {
      buf = new ReadPathType.Buffer(bench.readSize);
      offsets =
          bench.file.randomOffsets(
              bench.readSize, 13 + bench.threadSeeds.getAndIncrement(), SEQUENCE);
    }
  }

  private byte pread(ThreadReads t) throws IOException {
    long pos = t.offsets[t.next++ & (SEQUENCE - 1)];
    file.reader.readFully(pos, t.buf);
    return t.buf.array()[(int) (pos & 511)];
  }

  @Benchmark
  @Threads(1)
  public byte pread_t1(ThreadReads t) throws IOException {
    return pread(t);
  }

  @Benchmark
  @Threads(2)
  public byte pread_t2(ThreadReads t) throws IOException {
    return pread(t);
  }

  @Benchmark
  @Threads(8)
  public byte pread_t8(ThreadReads t) throws IOException {
    return pread(t);
  }

  @Benchmark
  @Threads(32)
  public byte pread_t32(ThreadReads t) throws IOException {
    return pread(t);
  }
}
