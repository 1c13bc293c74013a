package io.scr.benchmarks.read;

import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
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
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * Tailing a file still being written, as HBase replication tails a write-ahead log ({@code
 * WALEntryStream}: open, seek to the remembered position, read to the end, close; again).
 *
 * <p>A writer thread (stock client) appends a record of 1 to {@code maxRecord} bytes (seeded random
 * sizes) and calls {@code hflush()} every millisecond to one file of 1 MiB blocks, for the whole
 * trial; the file stays open. The benchmark thread is the reader: each operation is one poll (open
 * through the path under test, seek, read to the end, close), and a poll that found nothing new
 * parks {@value #IDLE_POLL_MICROS} µs before the next. Every byte read is checked against what was
 * written.
 *
 * <p>The JMH score is the time of one poll. The figures the benchmark is for are printed at the end
 * of each trial (line {@code TAIL ...}), over the measured iterations only:
 *
 * <ul>
 *   <li><b>lag p50/p99</b>: per record, from its {@code hflush()} returning in the writer to the
 *       reader holding its last byte (0 when the reader had it first: the DataNode makes bytes
 *       visible before the writer's ack arrives);
 *   <li><b>short-circuit share</b>: bytes the reader's streams counted as short-circuit in their
 *       {@code ReadStatistics} over all bytes they read (the file is open throughout);
 *   <li><b>CPU per MiB</b>: the reader thread's CPU time ({@code ThreadMXBean}) over the MiB it
 *       read, polls that found nothing included.
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 4)
@Fork(1)
@Threads(1)
public class TailReadBenchmark {
  static final int BLOCK_SIZE = 1 << 20;
  static final long IDLE_POLL_MICROS = 100;
  private static final String FILE = "/bench/tail";
  private static final String WARM_FILE = "/bench/tail-warm";

  /** The written bytes repeat with this period: file offset {@code o} holds DATA[o % period]. */
  private static final int DATA_PERIOD = 8 << 20;

  /** Records a trial can hold (two minutes at one per millisecond); the writer stops after. */
  private static final int MAX_RECORDS = 120_000;

  @Param({
    "STOCK_TCP",
    "SCR_FILESYSTEM",
    "SCR_FILESYSTEM_SHIM",
    "SCR_ACCESSOR",
    "SCR_ACCESSOR_SHIM"
  })
  ReadPathType path;

  /** The largest record; sizes are uniform in [1, maxRecord] (an HBase WAL entry is ~0.1-4 KiB). */
  @Param({"4096"})
  int maxRecord;

  private MiniDfs dfs;
  private FileSystem readerFs;
  private byte[] data;
  private Writer writer;
  private final byte[] buf = new byte[64 * 1024];
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

  /** The reader's remembered position: every byte below it was read and checked. */
  private long position;

  /** Records whose last byte the reader holds (record k ends at writer.ends[k]). */
  private int observed;

  /** Per record: System.nanoTime() when the reader first held its last byte. */
  private final long[] observedAt = new long[MAX_RECORDS];

  private boolean measuring;
  private int iterationFirstObserved;
  private long iterationCpu;
  private long iterationBytes;
  private long iterationShortCircuit;

  // Trial totals over measured iterations.
  private final long[] lags = new long[MAX_RECORDS];
  private int lagCount;
  private long cpuNanos;
  private long bytesRead;
  private long shortCircuitBytes;
  private long polls;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dfs = path.startCluster(BLOCK_SIZE, c -> {});
    data = new byte[DATA_PERIOD];
    new SplittableRandom(17).nextBytes(data);
    dfs.writeRandomFile(WARM_FILE, BLOCK_SIZE, 12);
    readerFs = path.newFileSystem(dfs, c -> {});
    // A new client's one-time set-up (engine, segment, threads) is not the tail's cost.
    try (FSDataInputStream in = readerFs.open(new Path(WARM_FILE))) {
      in.readFully(0, buf);
    }
    writer = new Writer(dfs.fileSystem().create(new Path(FILE), true), data, maxRecord);
    writer.start();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    try {
      if (writer != null) {
        writer.finish();
      }
      report();
    } finally {
      if (readerFs != null) {
        readerFs.close();
      }
      if (path.name().startsWith("SCR_ACCESSOR")) {
        ReadPathType.releaseAccessorEngines();
      }
      if (dfs != null) {
        dfs.close();
      }
    }
  }

  @Setup(Level.Iteration)
  public void startIteration(IterationParams params) {
    measuring = params.getType() == IterationType.MEASUREMENT;
    iterationFirstObserved = observed;
    iterationCpu = threads.getCurrentThreadCpuTime();
    iterationBytes = 0;
    iterationShortCircuit = 0;
  }

  @TearDown(Level.Iteration)
  public void endIteration() throws IOException {
    writer.check();
    if (!measuring) {
      return;
    }
    cpuNanos += threads.getCurrentThreadCpuTime() - iterationCpu;
    bytesRead += iterationBytes;
    shortCircuitBytes += iterationShortCircuit;
    // Records the reader got in this iteration whose hflush has returned (the reader may hold a
    // record's bytes before its writer's hflush returns; such a record's lag is 0).
    int end = Math.min(observed, writer.written);
    for (int k = iterationFirstObserved; k < end; k++) {
      lags[lagCount++] = Math.max(0, observedAt[k] - writer.returnedAt[k]);
    }
  }

  /** One poll: open, seek to the remembered position, read to the end, close. */
  @Benchmark
  public long poll() throws IOException {
    long before = position;
    try (FSDataInputStream in = readerFs.open(new Path(FILE))) {
      in.seek(position);
      int n;
      while ((n = in.read(buf, 0, buf.length)) > 0) {
        check(position, n);
        position += n;
        long now = System.nanoTime();
        long[] ends = writer.ends;
        while (observed < MAX_RECORDS && ends[observed] <= position) {
          observedAt[observed++] = now;
        }
      }
      ReadStatistics stats = ((HdfsDataInputStream) in).getReadStatistics();
      iterationBytes += stats.getTotalBytesRead();
      iterationShortCircuit += stats.getTotalShortCircuitBytesRead();
    }
    if (measuring) {
      polls++;
    }
    if (position == before) {
      LockSupport.parkNanos(IDLE_POLL_MICROS * 1000);
    }
    return position;
  }

  private void check(long pos, int n) {
    for (int done = 0; done < n; ) {
      int at = (int) ((pos + done) % DATA_PERIOD);
      int len = Math.min(n - done, DATA_PERIOD - at);
      if (!Arrays.equals(buf, done, done + len, data, at, at + len)) {
        throw new IllegalStateException(path + " returned wrong bytes at " + (pos + done));
      }
      done += len;
    }
  }

  private void report() {
    long[] sorted = Arrays.copyOf(lags, lagCount);
    Arrays.sort(sorted);
    System.out.printf(
        "%nTAIL path=%s records=%d lag_p50_us=%.1f lag_p99_us=%.1f sc_share=%.2f%% "
            + "cpu_ms_per_mib=%.2f mib=%.1f polls=%d late_hflush=%d%n",
        path,
        lagCount,
        percentile(sorted, 0.50) / 1e3,
        percentile(sorted, 0.99) / 1e3,
        bytesRead == 0 ? 0.0 : 100.0 * shortCircuitBytes / bytesRead,
        bytesRead == 0 ? 0.0 : cpuNanos / 1e6 / (bytesRead / 1048576.0),
        bytesRead / 1048576.0,
        polls,
        writer.late);
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
  }

  /**
   * Appends a record and hflushes every millisecond on its own thread. Record ends are fixed in
   * advance from the seed ({@link #ends}, read by the reader); {@link #returnedAt} and {@link
   * #written} are published by the volatile write of {@code written}.
   */
  private static final class Writer extends Thread {
    final long[] ends = new long[MAX_RECORDS];
    final long[] returnedAt = new long[MAX_RECORDS];
    volatile int written;

    /**
     * Records written more than 1 ms after their slot (the previous hflush took too long); the
     * schedule restarts from such a record.
     */
    volatile int late;

    private final FSDataOutputStream out;
    private final byte[] data;
    private volatile boolean stop;
    private volatile Throwable failure;

    /** Writes to {@code out} (created, so the reader finds the file from its first poll). */
    Writer(FSDataOutputStream out, byte[] data, int maxRecord) {
      super("tail-writer");
      setDaemon(true);
      this.out = out;
      this.data = data;
      SplittableRandom sizes = new SplittableRandom(23);
      long end = 0;
      for (int k = 0; k < MAX_RECORDS; k++) {
        end += 1 + sizes.nextInt(maxRecord);
        ends[k] = end;
      }
    }

    @Override
    public void run() {
      try (out) {
        long period = TimeUnit.MILLISECONDS.toNanos(1);
        long next = System.nanoTime();
        long pos = 0;
        int lateCount = 0;
        for (int k = 0; k < MAX_RECORDS && !stop; k++) {
          long now = System.nanoTime();
          long wait = next - now;
          if (wait > 0) {
            LockSupport.parkNanos(wait);
          } else if (wait < -period) {
            // More than a period behind (the last hflush took longer): write now, no burst.
            lateCount++;
            late = lateCount;
            next = now;
          }
          next += period;
          while (pos < ends[k]) {
            int at = (int) (pos % DATA_PERIOD);
            int len = (int) Math.min(ends[k] - pos, DATA_PERIOD - at);
            out.write(data, at, len);
            pos += len;
          }
          out.hflush();
          returnedAt[k] = System.nanoTime();
          written = k + 1;
        }
      } catch (Throwable e) {
        failure = e;
      }
    }

    void check() {
      Throwable e = failure;
      if (e != null) {
        throw new IllegalStateException("the writer failed", e);
      }
    }

    void finish() throws InterruptedException {
      stop = true;
      join(30_000);
      check();
    }
  }
}
