package io.scr.benchmarks.read;

import io.scr.cache.LeaseCacheStats;
import java.io.IOException;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * The HBase/HDFS short-circuit odyssey (P1 in the design brief): random 4 KiB preads spread
 * uniformly over {@value #BLOCKS} blocks, a working set four times stock's default replica cache
 * (256), by {@value #THREADS} threads. Stock with default settings thrashes (nearly every read
 * re-opens fds through the DataNode); stock tuned as operators do ({@link
 * ReadPathType#STOCK_SCR_TUNED}: 4096 entries) does not; scr runs with its defaults, which size the
 * cache from the process fd limit. Score: reads per second (all threads).
 *
 * <p>Hit and miss counts are reported as JMH secondary metrics {@code lookups} and {@code misses}
 * (sums per measured iteration; the report computes the hit rate): for scr from {@code
 * ScrClient.cacheStats()}, for stock from {@link StockCacheCounter}. Target: scr default hit rate
 * at least 99% where stock default thrashes.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(OdysseyBenchmark.THREADS)
public class OdysseyBenchmark {
  static final int THREADS = 4;
  static final int BLOCK_SIZE = 64 << 10;
  static final int BLOCKS = 1024;
  static final int READ = 4096;
  private static final int SEQUENCE = 1 << 14;
  private static final String FILE = "/bench/odyssey";

  @Param({
    "STOCK_SCR_DEFAULT",
    "STOCK_SCR_TUNED",
    "SCR_ACCESSOR",
    "SCR_FILESYSTEM",
    "SCR_FILESYSTEM_SHIM"
  })
  ReadPathType path;

  private BenchFile file;
  private StockCacheCounter stock;
  private final AtomicInteger threadSeeds = new AtomicInteger();
  private final AtomicBoolean iterationCounted = new AtomicBoolean();
  private long lookupsAtStart;
  private long missesAtStart;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    if (!path.isScr() && !path.isStockShortCircuit()) {
      throw new IllegalArgumentException(path + " has no replica cache to measure");
    }
    file =
        BenchFile.create(
            path,
            FILE,
            BLOCK_SIZE,
            BLOCKS,
            c -> c.setLong("dfs.client.read.prefetch.size", (long) BLOCK_SIZE * BLOCKS),
            c -> {});
    if (path.isStockShortCircuit()) {
      stock = StockCacheCounter.install((DistributedFileSystem) file.reader.fileSystem());
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (file != null) {
      file.close();
    }
  }

  @Setup(Level.Iteration)
  public void startCounting() {
    long[] now = counts();
    lookupsAtStart = now[0];
    missesAtStart = now[1];
    iterationCounted.set(false);
  }

  /** {lookups, misses} of the path's replica cache so far. */
  private long[] counts() {
    if (stock != null) {
      return new long[] {stock.lookups(), stock.misses()};
    }
    LeaseCacheStats s = ReadPathType.scrCacheStats(file.reader.fileSystem());
    return new long[] {s.hitCount() + s.missCount(), s.missCount()};
  }

  /**
   * The replica cache's lookups and misses during one measured iteration, as JMH secondary metrics.
   * The first thread to finish the iteration records the cache's totals; the others record 0, so
   * JMH's sum over threads is the iteration's total.
   */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class CacheCounters {
    public long lookups;
    public long misses;

    @Setup(Level.Iteration)
    public void reset() {
      lookups = 0;
      misses = 0;
    }

    @TearDown(Level.Iteration)
    public void record(OdysseyBenchmark bench) {
      if (bench.iterationCounted.compareAndSet(false, true)) {
        long[] now = bench.counts();
        lookups = now[0] - bench.lookupsAtStart;
        misses = now[1] - bench.missesAtStart;
      }
    }
  }

  /** One thread's buffer and offsets. */
  @State(Scope.Thread)
  public static class ThreadReads {
    final ReadPathType.Buffer buf = new ReadPathType.Buffer(READ);
    final long[] offsets = new long[SEQUENCE];
    int next;

    @Setup(Level.Trial)
    public void setUp(OdysseyBenchmark bench) {
      SplittableRandom random = new SplittableRandom(17 + bench.threadSeeds.getAndIncrement());
      for (int i = 0; i < SEQUENCE; i++) {
        // Within one block, unaligned: one replica per read.
        long off = 1 + random.nextLong(BLOCK_SIZE - READ - 1);
        offsets[i] = (long) random.nextInt(BLOCKS) * BLOCK_SIZE + off;
      }
    }
  }

  @Benchmark
  public byte pread4k(ThreadReads t, CacheCounters counters) throws IOException {
    long pos = t.offsets[t.next++ & (SEQUENCE - 1)];
    file.reader.readFully(pos, t.buf);
    return t.buf.array()[(int) (pos & 511)];
  }
}
