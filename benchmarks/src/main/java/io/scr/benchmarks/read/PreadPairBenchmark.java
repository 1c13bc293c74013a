package io.scr.benchmarks.read;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The ratio of an scr path ({@code ScrFileSystem} or the accessor, mode A or B) to {@code
 * RAW_PREAD} for random 4 KiB preads, both measured in the same fork at the same time: one thread
 * reads the block files with {@code FileChannel} preads while another reads the same file through
 * the scr path (JMH group {@code pair}; secondary scores {@code pair:raw} and {@code pair:scr}, µs
 * per read).
 *
 * <p>Why: {@link PreadBenchmark} measures each path in its own fork, and on the 2-core virtual
 * machine this project is built on a fork's speed moves by tens of percent (RAW_PREAD ran 0.98-1.23
 * µs in one fork and 1.29-1.47 µs in the next), so a ratio of two forks' scores moves with it. Here
 * both paths share the fork, the JIT's luck, the page cache and whatever else runs on the machine;
 * each has a core (2 threads on 2 cores, the DataNode idle since every read is local and cached).
 *
 * <p>{@code SCR_FILESYSTEM_MAPPED} is {@code ScrFileSystem} with mapped reads on (no {@code pread}
 * per read once a replica is hot); target: at most 1.0x {@code RAW_PREAD}.
 *
 * <p>Same file layout and offsets as {@link PreadBenchmark}: {@value PreadBenchmark#BLOCKS} blocks
 * of {@value PreadBenchmark#BLOCK_SIZE} bytes, read and checked in setup through both paths;
 * offsets uniform random, not chunk-aligned, a read may cross a block boundary.
 */
@State(Scope.Group)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 10, time = 1)
@Fork(2)
public class PreadPairBenchmark {
  private static final String FILE = "/bench/pread-pair";
  private static final int SEQUENCE = 1 << 14;

  /** The scr path read beside {@code RAW_PREAD}: ScrFileSystem or the accessor, mode A or B. */
  @Param({
    "SCR_FILESYSTEM",
    "SCR_ACCESSOR",
    "SCR_FILESYSTEM_SHIM",
    "SCR_ACCESSOR_SHIM",
    "SCR_FILESYSTEM_MAPPED"
  })
  ReadPathType path;

  @Param({"4096"})
  int readSize;

  BenchFile scrFile;
  ReadPathType.Reader raw;
  private final AtomicInteger threadSeeds = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    scrFile =
        BenchFile.create(
            path, FILE, PreadBenchmark.BLOCK_SIZE, PreadBenchmark.BLOCKS, c -> {}, c -> {});
    raw = ReadPathType.RAW_PREAD.open(scrFile.dfs, FILE);
    ReadPathType.Buffer buf = new ReadPathType.Buffer(1 << 20);
    for (long pos = 0; pos + buf.array().length <= scrFile.length; pos += buf.array().length) {
      raw.readFully(pos, buf);
      scrFile.check(pos, buf);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try {
      if (raw != null) {
        raw.close();
      }
    } finally {
      if (scrFile != null) {
        scrFile.close();
      }
    }
  }

  /** One benchmark thread's buffer and offsets. */
  @State(Scope.Thread)
  public static class ThreadReads {
    ReadPathType.Buffer buf;
    long[] offsets;
    int next;

    @Setup(Level.Trial)
    public void setUp(PreadPairBenchmark bench) {
      buf = new ReadPathType.Buffer(bench.readSize);
      offsets =
          bench.scrFile.randomOffsets(
              bench.readSize, 13 + bench.threadSeeds.getAndIncrement(), SEQUENCE);
    }
  }

  private static byte pread(ReadPathType.Reader reader, ThreadReads t) throws IOException {
    long pos = t.offsets[t.next++ & (SEQUENCE - 1)];
    reader.readFully(pos, t.buf);
    return t.buf.array()[(int) (pos & 511)];
  }

  @Benchmark
  @Group("pair")
  @GroupThreads(1)
  public byte raw(ThreadReads t) throws IOException {
    return pread(raw, t);
  }

  @Benchmark
  @Group("pair")
  @GroupThreads(1)
  public byte scr(ThreadReads t) throws IOException {
    return pread(scrFile.reader, t);
  }
}
