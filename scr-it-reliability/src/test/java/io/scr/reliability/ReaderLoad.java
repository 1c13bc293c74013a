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
 * <p>Each file is opened twice: a <em>warm</em> stream reads only the first half of the file's
 * blocks, which {@link #warm()} reads once before any fault (their replicas are open), and a
 * <em>cold</em> stream reads only the second half, whose blocks are first read when the test
 * {@linkplain #release(int) releases} them. So the read statistics of the warm streams describe
 * replicas opened before the fault, those of the cold streams blocks first read after it. Every
 * read is timed, classified ({@link Kind}) and compared with the bytes written.
 *
 * <p>Thread-safety: {@link #start()}, {@link #release(int)}, {@link #stop()} and the accessors may
 * be called from the test thread while the reader threads run; samples are in a concurrent queue.
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

  /** One pread: when it started, how long it took, what it read, and its failure if any. */
  static final class Sample {
    final long startNanos;
    final long nanos;
    final Kind kind;
    final String where;
    final String failure;

    Sample(long startNanos, long nanos, Kind kind, String where, String failure) {
      this.startNanos = startNanos;
      this.nanos = nanos;
      this.kind = kind;
      this.where = where;
      this.failure = failure;
    }

    @Override
    public String toString() {
      return kind
          + " "
          + where
          + " "
          + nanos / 1000
          + " µs"
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
  private final List<FSDataInputStream> warmStreams = new ArrayList<>();
  private final List<FSDataInputStream> coldStreams = new ArrayList<>();
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
   * Opens every file of {@code files} (path to its bytes) twice on {@code fs}; blocks of {@code
   * blockSize}, the first {@code warmShare} (0 to 1) of each file's blocks warm; {@code threads}
   * readers of every block and {@code openReplicaThreads} readers of the warm blocks only, pausing
   * {@code pauseMicros} between reads.
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
    for (int f = 0; f < paths.size(); f++) {
      byte[] bytes = files.get(paths.get(f));
      data.add(bytes);
      warmStreams.add(fs.open(new Path(paths.get(f))));
      coldStreams.add(fs.open(new Path(paths.get(f))));
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

  /** Reads every warm block once (its replica opens), before any fault. */
  void warm() {
    Random r = new Random(7);
    for (Block b : warmBlocks) {
      read(r, Kind.WARM, warmStreams.get(b.file), b);
    }
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
      Thread th =
          new Thread(() -> loop(r, warmOnly), name + (warmOnly ? "-open-" : "-reader-") + t);
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

  private void loop(Random r, boolean warmOnly) {
    int owed = 0;
    while (!stopping) {
      int claim = claimed.get();
      int done = readOnce.size();
      if (!warmOnly
          && owed == 0
          && claim < released.get()
          && claimed.compareAndSet(claim, claim + 1)) {
        Block b = coldBlocks.get(claim);
        read(r, Kind.FIRST, coldStreams.get(b.file), b);
        readOnce.add(b);
        owed = Math.max(0, laterReadsPerFirst);
      } else if (!warmOnly && done > 0 && (owed > 0 || r.nextBoolean())) {
        owed = Math.max(0, owed - 1);
        Block b = readOnce.get(r.nextInt(done));
        read(r, Kind.COLD, coldStreams.get(b.file), b);
      } else if (!warmBlocks.isEmpty()) {
        Block b = warmBlocks.get(r.nextInt(warmBlocks.size()));
        read(r, Kind.WARM, warmStreams.get(b.file), b);
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
    long start = System.nanoTime();
    try {
      in.readFully(pos, buf);
    } catch (IOException | RuntimeException e) {
      failure = e.toString();
    }
    long nanos = System.nanoTime() - start;
    if (failure == null) {
      byte[] expected = data.get(b.file);
      if (!Arrays.equals(buf, 0, len, expected, (int) pos, (int) pos + len)) {
        failure = "bytes differ from the file's";
      }
    }
    samples.add(new Sample(start, nanos, kind, where, failure));
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

  /** Bytes read and short-circuit bytes read so far by the warm (or cold) streams. */
  Bytes bytes(boolean warmStreams) {
    long total = 0;
    long sc = 0;
    for (FSDataInputStream in : warmStreams ? this.warmStreams : this.coldStreams) {
      HdfsDataInputStream h = (HdfsDataInputStream) in;
      total += h.getReadStatistics().getTotalBytesRead();
      sc += h.getReadStatistics().getTotalShortCircuitBytesRead();
    }
    return new Bytes(total, sc);
  }

  /** Bytes read by every stream so far. */
  Bytes bytes() {
    return bytes(true).plus(bytes(false));
  }

  /** Cumulative byte counts of streams at one moment. */
  static final class Bytes {
    final long total;
    final long shortCircuit;

    Bytes(long total, long shortCircuit) {
      this.total = total;
      this.shortCircuit = shortCircuit;
    }

    Bytes plus(Bytes o) {
      return new Bytes(total + o.total, shortCircuit + o.shortCircuit);
    }

    /** The short-circuit share of the bytes read between {@code earlier} and this. */
    double shareSince(Bytes earlier) {
      long t = total - earlier.total;
      return t == 0 ? Double.NaN : (double) (shortCircuit - earlier.shortCircuit) / t;
    }

    String since(Bytes earlier) {
      return String.format(
          "%d of %d bytes short-circuit",
          shortCircuit - earlier.shortCircuit, total - earlier.total);
    }
  }

  @Override
  public void close() throws IOException {
    stopping = true;
    for (FSDataInputStream in : warmStreams) {
      in.close();
    }
    for (FSDataInputStream in : coldStreams) {
      in.close();
    }
  }
}
