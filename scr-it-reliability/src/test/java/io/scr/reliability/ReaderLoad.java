package io.scr.reliability;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;

/**
 * Reader threads doing random 4 KiB preads on streams held open, as a RegionServer's handlers do.
 *
 * <p>Every reader thread opens every file twice: a <em>warm</em> stream reads only the first half
 * of the file's blocks, which {@link #warm()} reads once before any fault (their replicas are
 * open), and a <em>cold</em> stream reads only the second half, whose blocks are first read when
 * the test {@linkplain #release(int) releases} them. Every read is timed, classified ({@link
 * Kind}), compared with the bytes written, and attributed: a stream belongs to one thread, so the
 * growth of its {@code getTotalShortCircuitBytesRead()} across one read is exactly what that read
 * took short-circuit.
 *
 * <p>Thread-safety: {@link #start}, {@link #release(int)}, {@link #stop()} and the accessors may be
 * called from the test thread while the reader threads run; samples are in a concurrent queue.
 */
final class ReaderLoad implements AutoCloseable {
  static final int READ = 4096;

  enum Kind {
    /** A read of a block the warm stream read before the fault. */
    WARM,
    /** The first read of a block on the cold stream. */
    FIRST,
    /** A later read of a block on the cold stream. */
    COLD
  }

  /**
   * One pread: when it started, how long it took, what it read, how many of its bytes came
   * short-circuit, and its failure if any.
   */
  static final class Sample {
    final long startNanos;
    final long nanos;
    final Kind kind;
    final String where;
    final int length;
    final long shortCircuitBytes;
    final String failure;

    Sample(
        long startNanos,
        long nanos,
        Kind kind,
        String where,
        int length,
        long shortCircuitBytes,
        String failure) {
      this.startNanos = startNanos;
      this.nanos = nanos;
      this.kind = kind;
      this.where = where;
      this.length = length;
      this.shortCircuitBytes = shortCircuitBytes;
      this.failure = failure;
    }

    boolean shortCircuit() {
      return shortCircuitBytes == length;
    }

    @Override
    public String toString() {
      return kind
          + " "
          + where
          + " "
          + nanos / 1000
          + " µs"
          + (shortCircuit() ? "" : " (" + shortCircuitBytes + " of " + length + " B short-circuit)")
          + (failure == null ? "" : " " + failure);
    }
  }

  /** A block of a file: which file, where it starts, how long. */
  private static final class Block {
    final int file;
    final long offset;
    final int length;

    Block(int file, long offset, int length) {
      this.file = file;
      this.offset = offset;
      this.length = length;
    }
  }

  private final List<byte[]> data;
  private final List<String> paths;

  /** Per reader thread, per file: the thread's own streams. */
  private final List<List<FSDataInputStream>> warmStreams = new ArrayList<>();

  private final List<List<FSDataInputStream>> coldStreams = new ArrayList<>();
  private final List<Block> warmBlocks = new ArrayList<>();
  private final List<Block> coldBlocks = new ArrayList<>();
  private final AtomicInteger released = new AtomicInteger();
  private final AtomicInteger claimed = new AtomicInteger();

  /** Cold blocks whose first read has returned (later reads never queue behind a first read). */
  private final List<Block> readOnce = new CopyOnWriteArrayList<>();

  private final int threads;
  private final int openReplicaThreads;
  private final long pauseNanos;
  private final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
  private final List<Thread> readers = new ArrayList<>();
  private volatile boolean stopping;
  private volatile int laterReadsPerFirst = -1;

  /**
   * Opens every file of {@code files} (path to its bytes) twice per reader on {@code fs}; blocks of
   * {@code blockSize}, the first {@code warmShare} (0 to 1) of each file's blocks warm; {@code
   * threads} readers of every block and {@code openReplicaThreads} readers of the warm blocks only,
   * pausing {@code pauseMicros} between reads.
   */
  ReaderLoad(
      FileSystem fs,
      Map<String, byte[]> files,
      int blockSize,
      double warmShare,
      int threads,
      int openReplicaThreads,
      int pauseMicros)
      throws IOException {
    this.paths = new ArrayList<>(files.keySet());
    this.data = new ArrayList<>();
    this.threads = threads;
    this.openReplicaThreads = openReplicaThreads;
    this.pauseNanos = TimeUnit.MICROSECONDS.toNanos(pauseMicros);
    for (int t = 0; t < threads + openReplicaThreads; t++) {
      List<FSDataInputStream> warm = new ArrayList<>();
      List<FSDataInputStream> cold = new ArrayList<>();
      for (String p : paths) {
        warm.add(fs.open(new Path(p)));
        cold.add(fs.open(new Path(p)));
      }
      warmStreams.add(warm);
      coldStreams.add(cold);
    }
    for (int f = 0; f < paths.size(); f++) {
      byte[] bytes = files.get(paths.get(f));
      data.add(bytes);
      int blocks = (bytes.length + blockSize - 1) / blockSize;
      for (int b = 0; b < blocks; b++) {
        Block block =
            new Block(f, (long) b * blockSize, Math.min(blockSize, bytes.length - b * blockSize));
        (b < (int) (blocks * warmShare) ? warmBlocks : coldBlocks).add(block);
      }
    }
    Collections.shuffle(coldBlocks, new Random(42));
  }

  int coldBlockCount() {
    return coldBlocks.size();
  }

  /** Reads every warm block once on every reader's stream (its replica opens), before any fault. */
  void warm() {
    Random r = new Random(7);
    for (List<FSDataInputStream> streams : warmStreams) {
      for (Block b : warmBlocks) {
        read(r, Kind.WARM, streams.get(b.file), b);
      }
    }
    samples.clear();
  }

  /**
   * After each first read, a reader reads {@code n} times from blocks already read before it claims
   * the next new block (a reader that opens a block reads it several times); by default readers
   * claim a released block whenever one is waiting.
   */
  ReaderLoad laterReadsPerFirst(int n) {
    laterReadsPerFirst = n;
    return this;
  }

  /** Starts the reader threads. */
  void start(String name) {
    for (int t = 0; t < threads + openReplicaThreads; t++) {
      Random r = new Random(1000 + t);
      boolean warmOnly = t >= threads;
      List<FSDataInputStream> warm = warmStreams.get(t);
      List<FSDataInputStream> cold = coldStreams.get(t);
      Thread th =
          new Thread(
              () -> loop(r, warmOnly, warm, cold), name + (warmOnly ? "-open-" : "-reader-") + t);
      th.setDaemon(true);
      readers.add(th);
      th.start();
    }
  }

  /** Lets the readers first-read up to {@code n} more cold blocks (in a fixed random order). */
  void release(int n) {
    released.updateAndGet(v -> Math.min(coldBlocks.size(), v + n));
  }

  /** How many cold blocks have had their first read return. */
  int firstReadsDone() {
    return readOnce.size();
  }

  private void loop(
      Random r, boolean warmOnly, List<FSDataInputStream> warm, List<FSDataInputStream> cold) {
    int owed = 0;
    while (!stopping) {
      int claim = claimed.get();
      int done = readOnce.size();
      if (!warmOnly
          && owed == 0
          && claim < released.get()
          && claimed.compareAndSet(claim, claim + 1)) {
        Block b = coldBlocks.get(claim);
        read(r, Kind.FIRST, cold.get(b.file), b);
        readOnce.add(b);
        owed = Math.max(0, laterReadsPerFirst);
      } else if (!warmOnly && done > 0 && (owed > 0 || r.nextBoolean())) {
        owed = Math.max(0, owed - 1);
        Block b = readOnce.get(r.nextInt(done));
        read(r, Kind.COLD, cold.get(b.file), b);
      } else if (!warmBlocks.isEmpty()) {
        Block b = warmBlocks.get(r.nextInt(warmBlocks.size()));
        read(r, Kind.WARM, warm.get(b.file), b);
      }
      LockSupport.parkNanos(pauseNanos);
    }
  }

  private void read(Random r, Kind kind, FSDataInputStream in, Block b) {
    long pos = b.offset + (long) r.nextInt(Math.max(1, b.length - READ));
    int len = (int) Math.min(READ, b.offset + b.length - pos);
    byte[] buf = new byte[len];
    String where = paths.get(b.file) + "@" + pos;
    String failure = null;
    HdfsDataInputStream stream = (HdfsDataInputStream) in;
    long shortCircuitBefore = stream.getReadStatistics().getTotalShortCircuitBytesRead();
    long start = System.nanoTime();
    try {
      in.readFully(pos, buf);
    } catch (IOException | RuntimeException e) {
      failure = e.toString();
    }
    long nanos = System.nanoTime() - start;
    // a copy each time, read by the thread that owns the stream: exactly this read's bytes
    long shortCircuit =
        stream.getReadStatistics().getTotalShortCircuitBytesRead() - shortCircuitBefore;
    if (failure == null) {
      byte[] expected = data.get(b.file);
      if (!Arrays.equals(buf, 0, len, expected, (int) pos, (int) pos + len)) {
        failure = "bytes differ from the file's";
      }
    }
    samples.add(new Sample(start, nanos, kind, where, len, shortCircuit, failure));
  }

  /** Stops the readers and waits for them. */
  void stop() throws InterruptedException {
    stopping = true;
    for (Thread t : readers) {
      t.join(TimeUnit.MINUTES.toMillis(2));
      if (t.isAlive()) {
        throw new AssertionError(t.getName() + " still reading 2 min after stop: " + stackOf(t));
      }
    }
  }

  private static String stackOf(Thread t) {
    StringBuilder sb = new StringBuilder();
    for (StackTraceElement e : t.getStackTrace()) {
      sb.append("\n\tat ").append(e);
    }
    return sb.toString();
  }

  /** The samples whose read started in [fromNanos, toNanos) and match {@code which}. */
  List<Sample> samples(long fromNanos, long toNanos, Predicate<Sample> which) {
    List<Sample> out = new ArrayList<>();
    for (Sample s : samples) {
      if (s.startNanos - fromNanos >= 0 && s.startNanos - toNanos < 0 && which.test(s)) {
        out.add(s);
      }
    }
    return out;
  }

  /** Every failed read (an exception or wrong bytes). */
  List<Sample> failures() {
    List<Sample> out = new ArrayList<>();
    for (Sample s : samples) {
      if (s.failure != null) {
        out.add(s);
      }
    }
    return out;
  }

  static Sample slowest(List<Sample> samples) {
    Sample worst = null;
    for (Sample s : samples) {
      if (worst == null || s.nanos > worst.nanos) {
        worst = s;
      }
    }
    return worst;
  }

  /** The {@code q}-quantile (0..1) of the samples' latency, in nanoseconds. */
  static long quantileNanos(List<Sample> samples, double q) {
    long[] n = samples.stream().mapToLong(s -> s.nanos).sorted().toArray();
    if (n.length == 0) {
      return 0;
    }
    return n[Math.min(n.length - 1, (int) Math.ceil(q * n.length) - 1)];
  }

  /** The bytes read, and read short-circuit, by the reads among {@code samples}. */
  static Bytes bytes(List<Sample> samples) {
    long total = 0;
    long sc = 0;
    for (Sample s : samples) {
      total += s.length;
      sc += s.shortCircuitBytes;
    }
    return new Bytes(total, sc);
  }

  /** Bytes read, and read short-circuit, by some reads. */
  static final class Bytes {
    final long total;
    final long shortCircuit;

    Bytes(long total, long shortCircuit) {
      this.total = total;
      this.shortCircuit = shortCircuit;
    }

    /** The short-circuit share (NaN when nothing was read). */
    double share() {
      return total == 0 ? Double.NaN : (double) shortCircuit / total;
    }

    @Override
    public String toString() {
      return String.format("%d of %d bytes short-circuit", shortCircuit, total);
    }
  }

  @Override
  public void close() throws IOException {
    stopping = true;
    for (List<FSDataInputStream> streams : warmStreams) {
      for (FSDataInputStream in : streams) {
        in.close();
      }
    }
    for (List<FSDataInputStream> streams : coldStreams) {
      for (FSDataInputStream in : streams) {
        in.close();
      }
    }
  }
}
