package io.scr.benchmarks.read;

import io.scr.core.ScrKeys;
import io.scr.shim.ScrShimKeys;
import io.scr.shim.ScrShimPlugin;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
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
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * Replica open: the first read of a block the client has never read (the fd request round trip, the
 * shared-memory slot, the socket), p50/p99 with JMH's {@code SampleTime}, at 1 2 and 8 threads.
 * Target: p99 at most 300 µs at 8 threads for scr (stock measured on the reference machine: p50 846
 * µs, p99 6.4 ms).
 *
 * <p>The file has {@value #BLOCKS} blocks of {@value #BLOCK_SIZE} bytes. Each operation reads
 * {@value #READ} bytes of the next block. Every {@value #BLOCKS} operations make a
 * <em>generation</em>: a new file system with its own client context (so its replica cache, slot
 * pool and sockets start empty) and a stream opened with every block location prefetched (no
 * NameNode round trip is measured). A background thread opens the next generations before they are
 * needed and closes the ones every reader has left (with their stock short-circuit caches, which
 * stock keeps per context for the life of the JVM); an operation only waits when that thread fell
 * behind, which the samples then show honestly. {@code RAW_PREAD} opens the block file, preads and
 * closes it.
 *
 * <p><b>When generations are opened</b> ({@link #generations}). Opening one (a file system, a
 * client context, the NameNode's answer for 2048 blocks, all in this JVM) costs tens of
 * milliseconds, and closing one tens more. {@code DURING} (the default, comparable with the
 * generated results in docs/benchmarks.md): the background thread opens each generation while the
 * readers read, so much of every path's p99 is this harness's work. {@code BEFORE}: each
 * iteration's setup opens as many generations as the iteration before used, and a margin; only
 * closing (client work: replicas closed while others open) and, if the readers outrun the estimate,
 * an open ({@link ReplicaOpenPhases#harnessOpens}) happen while measuring. On a machine whose idle
 * cores are slow to wake (this 2-core VM) {@code BEFORE} also lets the cores idle more between
 * operations, which the medians then show.
 *
 * <p><b>Where an open's time goes</b>, as secondary results ({@link ReplicaOpenPhases}, µs): the
 * client's own timers ({@code ClientCounters.OpenPhase}: slot allocation, the op-87 exchange round
 * trip, the files: channels, meta header and checksums) for the scr paths, p50 and p99 of each
 * client generation closed during the iteration (else of the one being read), averaged over those
 * generations; and in mode B the shim's ({@code phase.request_fds.*} of its counters: queue to a
 * worker, checks, file opens, slot registration, hand-off back to the event loop, send of the reply
 * and fds, total), the mean of the iteration and the p50 and p99 since the trial began (warm-up
 * included). JMH sums secondary results over the iterations: read the per-iteration values.
 *
 * <p>The accessor paths share the engine ({@code ScrClient}) that {@code SCR_FILESYSTEM} measures
 * here; they are left out because the accessor holds its engines per context for the life of the
 * JVM, which a generation per 2048 reads would exhaust fds with.
 *
 * <p>12 warm-up iterations: with 3, the JIT's compiler threads still used 4.0-4.4 s of CPU in the 8
 * s after them (per-thread CPU from /proc), on the 2 cores the readers share.
 *
 * <p>Thread-safety: the readers and the background thread share the ring of generations (an {@code
 * AtomicReferenceArray}; a reader counts itself in a generation's {@code active} and re-checks the
 * ring before reading, so a retired generation is closed only after its last read); opening and
 * closing generations is serialized by {@code ringLock}. The per-trial and per-iteration fields are
 * JMH's set-up and tear-down's, which do not overlap the reads.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 12, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ReplicaOpenBenchmark {
  static final int BLOCK_SIZE = 8 << 10;
  static final int BLOCKS = 2048;
  static final int READ = 4096;

  /** Slots for generations: the one being read, the one before it, and those opened ahead. */
  static final int RING = 64;

  /** Generations kept open past the one being read: the background thread's horizon. */
  private static final int MIN_AHEAD = 2;

  private static final String FILE = "/bench/open";

  @Param({"RAW_PREAD", "STOCK_SCR_DEFAULT", "SCR_FILESYSTEM", "SCR_FILESYSTEM_SHIM"})
  ReadPathType path;

  /**
   * Mode B only: the shim's {@code scr.shim.fd.requests.on.event.loop} (op 87 served on the event
   * loop, no hand-off to a worker); on by default, as in the shim ({@code false}: the workers).
   */
  @Param({"true"})
  boolean shimOnEventLoop;

  /** When generations are opened (see the class comment). */
  public enum Generations {
    /** By the background thread while reads are timed (the default). */
    DURING,
    /** By each iteration's setup, as many as the iteration before used and a margin. */
    BEFORE
  }

  @Param({"DURING"})
  Generations generations;

  /** Mode B only: the shim's {@code scr.shim.io.threads} (its default, 2, unless overridden). */
  @Param({"2"})
  int shimIoThreads;

  private BenchFile file;
  private File[] blockFiles;
  final AtomicLong ops = new AtomicLong();
  final AtomicReferenceArray<Generation> ring = new AtomicReferenceArray<>(RING);
  private Thread preparer;

  /** Serializes opening and closing generations (the preparer, an iteration's setup). */
  private final Object ringLock = new Object();

  /**
   * How far past the current generation an iteration's setup opens: {@link #MIN_AHEAD} with {@code
   * DURING}; with {@code BEFORE}, what the previous iteration used and a margin.
   */
  private int ahead = MIN_AHEAD;

  /** {@link #ops} when the current iteration started. */
  private long opsAtIterationStart;

  /** Generations the background thread opened: each while reads were timed. */
  final AtomicLong harnessOpens = new AtomicLong();

  private volatile boolean stopping;

  /** {@code -Dscr.bench.replicaOpen.trace=FILE}: every read classed by the harness work it met. */
  private final OpenTrace trace = OpenTrace.fromSystemProperty();

  private boolean iterationMeasured;

  /** The trial's reader threads. */
  private int threads;

  private long iterationStartNanos;
  private volatile Throwable preparerFailure;

  /** One client context and its stream; {@code active} counts reads in flight. */
  static final class Generation {
    final long number;
    final FileSystem fs;
    final FSDataInputStream in;
    final AtomicInteger active = new AtomicInteger();

    Generation(long number, FileSystem fs, FSDataInputStream in) {
      this.number = number;
      this.fs = fs;
      this.in = in;
    }
  }

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws IOException {
    threads = params.getThreads();
    if (path != ReadPathType.RAW_PREAD && !path.isScr() && !path.isStockShortCircuit()) {
      throw new IllegalArgumentException(path + " opens no replicas");
    }
    file =
        BenchFile.create(
            path,
            FILE,
            BLOCK_SIZE,
            BLOCKS,
            c -> {
              c.setLong("dfs.client.read.prefetch.size", (long) BLOCK_SIZE * BLOCKS);
              c.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), shimOnEventLoop);
              c.setInt(ScrShimKeys.IO_THREADS.name(), shimIoThreads);
            },
            c -> {});
    if (path == ReadPathType.RAW_PREAD) {
      List<LocatedBlock> blocks =
          file.dfs
              .fileSystem()
              .getClient()
              .getLocatedBlocks(FILE, 0, Long.MAX_VALUE)
              .getLocatedBlocks();
      blockFiles = new File[blocks.size()];
      for (int i = 0; i < blockFiles.length; i++) {
        blockFiles[i] = file.dfs.cluster().getBlockFile(0, blocks.get(i).getBlock());
      }
      return;
    }
    if (path.isScr()) {
      shim = shimOf(file.dfs.cluster().getDataNodes().get(0));
    }
    preparer = new Thread(this::prepareAhead, "replica-open-preparer");
    preparer.setDaemon(true);
    preparer.start();
  }

  /**
   * Opens the generations up to {@link #ahead} past the current one before the iteration starts:
   * with {@code BEFORE}, what the previous iteration used and a margin, so that no file system is
   * created while operations are timed unless the readers outrun the estimate; with {@code DURING},
   * the background thread's horizon (it opens the rest while measuring).
   */
  @Setup(Level.Iteration)
  public void prepareIteration(IterationParams iteration) throws IOException {
    iterationMeasured = iteration.getType() == IterationType.MEASUREMENT;
    if (blockFiles != null) {
      iterationStartNanos = System.nanoTime();
      return;
    }
    long current = ops.get() / BLOCKS;
    synchronized (ringLock) {
      for (long g = current; g <= current + ahead; g++) {
        int slot = (int) (g % RING);
        Generation held = ring.get(slot);
        if (held != null && held.number == g) {
          continue;
        }
        if (held != null) {
          retire(slot, held);
        }
        ring.set(slot, open(g));
      }
    }
    opsAtIterationStart = ops.get();
    iterationStartNanos = System.nanoTime();
  }

  /** Sizes the next iteration's generations from this one's. */
  @TearDown(Level.Iteration)
  public void iterationDone() {
    if (trace != null && iterationMeasured) {
      trace.window(iterationStartNanos, System.nanoTime());
    }
    if (generations == Generations.BEFORE) {
      long used = (ops.get() - opsAtIterationStart) / BLOCKS + 1;
      ahead = (int) Math.max(MIN_AHEAD, Math.min(RING - 3, used + used / 4 + 2));
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    stopping = true;
    if (preparer != null) {
      LockSupport.unpark(preparer);
      preparer.join();
    }
    for (int i = 0; i < RING; i++) {
      Generation g = ring.getAndSet(i, null);
      if (g != null) {
        close(g);
      }
    }
    if (file != null) {
      file.close();
    }
    if (trace != null) {
      StringBuilder shimLatencies = new StringBuilder();
      if (shim != null) {
        shim.counters().entrySet().stream()
            .filter(e -> e.getKey().startsWith("latency."))
            .forEach(
                e -> shimLatencies.append(' ').append(e.getKey()).append('=').append(e.getValue()));
      }
      trace.write(path + ", " + threads + " threads, generations " + generations + shimLatencies);
    }
    if (preparerFailure != null) {
      throw new IllegalStateException("the generation preparer failed", preparerFailure);
    }
  }

  /** The engines of generations closed since the last iteration ended (scr paths). */
  final ConcurrentLinkedQueue<ClosedEngine> closedEngines = new ConcurrentLinkedQueue<>();

  /** A closed generation's engine, whose counters outlive it; read after the iteration. */
  static final class ClosedEngine {
    final long number;
    final io.scr.core.ScrClient scr;

    ClosedEngine(long number, io.scr.core.ScrClient scr) {
      this.number = number;
      this.scr = scr;
    }
  }

  final AtomicBoolean iterationReported = new AtomicBoolean();

  /** The shim of mode B's DataNode, or null. */
  ScrShimPlugin shim;

  /** The shim's phase sums and counts at the end of the previous iteration. */
  Map<String, Long> shimBefore = Map.of();

  private static ScrShimPlugin shimOf(DataNode dn) {
    try {
      Field f = DataNode.class.getDeclaredField("plugins");
      f.setAccessible(true);
      @SuppressWarnings("unchecked")
      List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
      if (plugins != null) {
        for (ServicePlugin p : plugins) {
          if (p instanceof ScrShimPlugin) {
            return (ScrShimPlugin) p;
          }
        }
      }
      return null;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("DataNode.plugins is not Hadoop 3.4.2's", e);
    }
  }

  private Generation open(long number) throws IOException {
    long start = System.nanoTime();
    Generation g = openUntraced(number);
    if (trace != null) {
      trace.harness(OpenTrace.OPEN, start, System.nanoTime());
    }
    return g;
  }

  private Generation openUntraced(long number) throws IOException {
    FileSystem fs =
        path.newFileSystem(
            file.dfs,
            c -> {
              c.set(
                  ScrKeys.DFS_CLIENT_CONTEXT.name(),
                  "replica-open-" + ProcessHandle.current().pid() + "-g" + number);
              c.setLong("dfs.client.read.prefetch.size", (long) BLOCK_SIZE * BLOCKS);
              // Real opens on the reading thread: no replica opened ahead on open.
              c.setInt(ScrKeys.PREFETCH_MAX_BLOCKS.name(), 0);
            });
    return new Generation(number, fs, fs.open(new Path(FILE)));
  }

  private void close(Generation g) throws IOException {
    long start = System.nanoTime();
    closeUntraced(g);
    if (trace != null) {
      trace.harness(OpenTrace.CLOSE, start, System.nanoTime());
    }
  }

  private void closeUntraced(Generation g) throws IOException {
    if (g.fs instanceof io.scr.core.hdfs.ScrFileSystem) {
      // Its timers are read when the iteration ends (ReplicaOpenPhases.record), not here: a
      // snapshot
      // also counts the process's open fds (a /proc/self/fd listing) and walks the cache, about 7
      // ms of harness work per generation that the stock paths do not pay, and closes run while
      // reads are timed.
      closedEngines.add(
          new ClosedEngine(g.number, ((io.scr.core.hdfs.ScrFileSystem) g.fs).scrClient()));
    }
    g.in.close();
    if (g.fs instanceof DistributedFileSystem && path.isStockShortCircuit()) {
      BenchFile.closeStockCaches((DistributedFileSystem) g.fs);
    }
    g.fs.close();
  }

  /**
   * Closes the generations every reader has left, and keeps the next {@link #MIN_AHEAD} open (with
   * {@code BEFORE} they usually are already: {@link #prepareIteration} opened them). Counts its
   * opens in {@link #harnessOpens}. Runs until tear-down; wakes when a reader crosses into a new
   * generation or after 1 ms.
   */
  private void prepareAhead() {
    try {
      while (!stopping) {
        long current = ops.get() / BLOCKS;
        synchronized (ringLock) {
          for (int slot = 0; slot < RING; slot++) {
            Generation held = ring.get(slot);
            // current - 1 stays for stragglers: retired on a later pass
            if (held != null && held.number < current - 1) {
              retire(slot, held);
            }
          }
          for (long g = current; g <= current + MIN_AHEAD; g++) {
            int slot = (int) (g % RING);
            Generation held = ring.get(slot);
            if (held == null || held.number != g) {
              if (held != null) {
                retire(slot, held);
              }
              ring.set(slot, open(g));
              harnessOpens.incrementAndGet();
            }
          }
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
      }
    } catch (IOException | RuntimeException e) {
      preparerFailure = e;
    }
  }

  /**
   * Unpublishes {@code held}, waits out the reads that got in before (they re-check), closes it.
   */
  private void retire(int slot, Generation held) throws IOException {
    ring.compareAndSet(slot, held, null);
    while (held.active.get() != 0) {
      Thread.onSpinWait();
    }
    close(held);
  }

  /** One thread's buffer. */
  @State(Scope.Thread)
  public static class ThreadBuffer {
    final ReadPathType.Buffer buf = new ReadPathType.Buffer(READ);

    /** The number of this thread's last operation (which block of which generation it read). */
    long op;
  }

  private byte firstRead(ThreadBuffer t) throws IOException {
    if (trace == null) {
      return firstReadUntraced(t);
    }
    long start = System.nanoTime();
    byte b = firstReadUntraced(t);
    // A context's first read on each thread: each waits for the context's set-up (its first
    // shared-memory segment above all), whichever thread does it.
    trace.read(start, System.nanoTime(), t.op % BLOCKS < threads);
    return b;
  }

  private byte firstReadUntraced(ThreadBuffer t) throws IOException {
    long n = ops.getAndIncrement();
    t.op = n;
    int block = (int) (n % BLOCKS);
    long pos = (long) block * BLOCK_SIZE + 1 + (n * 511) % (BLOCK_SIZE - READ - 1);
    byte[] b = t.buf.array();
    if (blockFiles != null) {
      try (FileChannel ch = FileChannel.open(blockFiles[block].toPath(), StandardOpenOption.READ)) {
        ByteBuffer view = t.buf.view;
        view.clear();
        while (view.hasRemaining()) {
          if (ch.read(view, pos % BLOCK_SIZE + view.position()) < 0) {
            throw new IOException("short block file " + blockFiles[block]);
          }
        }
      }
      return b[0];
    }
    long number = n / BLOCKS;
    if (block == 0) {
      LockSupport.unpark(preparer);
    }
    while (true) {
      Generation g = awaitGeneration(number);
      g.active.incrementAndGet();
      try {
        if (ring.get((int) (g.number % RING)) == g) {
          g.in.readFully(pos, b, 0, READ);
          return b[0];
        }
      } finally {
        g.active.decrementAndGet();
      }
      // This thread fell whole generations behind and its generation was retired.
      number = ops.get() / BLOCKS;
    }
  }

  private Generation awaitGeneration(long number) {
    int slot = (int) (number % RING);
    while (true) {
      Generation g = ring.get(slot);
      if (g != null && g.number == number) {
        return g;
      }
      long current = ops.get() / BLOCKS;
      if (number < current - 1) {
        number = current; // retired while this thread was descheduled
        slot = (int) (number % RING);
        continue;
      }
      if (preparerFailure != null) {
        throw new UncheckedIOException(
            new IOException("the generation preparer failed", preparerFailure));
      }
      LockSupport.unpark(preparer);
      Thread.onSpinWait();
    }
  }

  @Benchmark
  @Threads(1)
  public byte firstRead_t1(ThreadBuffer t, ReplicaOpenPhases phases) throws IOException {
    return firstRead(t);
  }

  @Benchmark
  @Threads(2)
  public byte firstRead_t2(ThreadBuffer t, ReplicaOpenPhases phases) throws IOException {
    return firstRead(t);
  }

  @Benchmark
  @Threads(8)
  public byte firstRead_t8(ThreadBuffer t, ReplicaOpenPhases phases) throws IOException {
    return firstRead(t);
  }
}
