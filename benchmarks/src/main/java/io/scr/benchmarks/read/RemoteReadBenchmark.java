package io.scr.benchmarks.read;

import io.scr.core.ScrKeys;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.openjdk.jmh.annotations.AuxCounters;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Reads of blocks the local DataNode does not hold, which must cost what stock costs: a
 * two-DataNode cluster of the path's mode, a file whose every block lives only on DataNode 1, and a
 * client given only DataNode 0's socket ({@code scr.client.socket.paths}), so every block is remote
 * to scr and read the stock way over TCP. Random 4 KiB preads, checksums verified, page cache warm.
 * Score: µs per read.
 *
 * <ul>
 *   <li>{@code pread}: one thread, each path in its own fork ({@code STOCK_TCP} is the baseline).
 *   <li>{@code pair}: {@code pair:stock} (stock {@code DistributedFileSystem} over TCP, its own
 *       stream) and {@code pair:scr} (the path) read the same file side by side in one fork, so the
 *       ratio {@code pair:scr / pair:stock} is not moved by a fork's speed or the machine's load
 *       (for {@code STOCK_TCP} it is the pairing's own noise: stock against stock).
 * </ul>
 *
 * <p>Target: at most 1.05x the time of stock TCP for both integration points, modes A and B; and at
 * most one fd request to DataNode 0 per block. The secondary result {@code fdRequests} counts the
 * fd requests DataNode 0 received during measured iterations (its {@code BlocksGetLocalPathInfo},
 * which a stock DataNode and the shim count for refused requests too); the trial fails if DataNode
 * 0 was asked more than once per block over the whole trial (setup, warm-up and measurement).
 *
 * <p>Stock short-circuit reads are off on every client ({@code
 * dfs.client.read.shortcircuit=false}): DataNode 1 stands for a DataNode on another host, which
 * stock reaches over TCP whatever its settings. Both DataNodes run on this host, so stock's own
 * short-circuit reader would otherwise read DataNode 1's blocks locally through its socket
 * template.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(2)
public class RemoteReadBenchmark {
  static final int BLOCK_SIZE = 4 << 20;
  static final int BLOCKS = 4;
  private static final int LENGTH = BLOCK_SIZE * BLOCKS;
  private static final int SEQUENCE = 1 << 14;
  private static final String FILE = "/bench/remote";

  @Param({
    "STOCK_TCP",
    "SCR_ACCESSOR",
    "SCR_FILESYSTEM",
    "SCR_ACCESSOR_SHIM",
    "SCR_FILESYSTEM_SHIM"
  })
  ReadPathType path;

  @Param({"4096"})
  int readSize;

  MiniDfs dfs;
  byte[] data;
  FSDataInputStream in;
  FSDataInputStream stockIn;
  private long fdRequestsAtStart;
  private long fdRequestsCounted;
  final AtomicBoolean iterationCounted = new AtomicBoolean();
  private final AtomicInteger threadSeeds = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    if (path.clusterMode() == DataNodeMode.STOCK_SCR) {
      StockNative.requireAvailable();
    }
    dfs =
        MiniDfs.builder()
            .dataNodes(2)
            .blockSize(BLOCK_SIZE)
            .mode(path.clusterMode())
            .configure(c -> c.setInt("dfs.replication", 1))
            .start();
    try {
      data = new byte[LENGTH];
      new SplittableRandom(11).nextBytes(data);
      writeOnDataNodeOne();
      fdRequestsAtStart = fdRequests();
      fdRequestsCounted = fdRequestsAtStart;
      String dn0 = dfs.socketPath(0);
      FileSystem fs =
          path.newFileSystem(
              dfs,
              c -> {
                c.set(ScrKeys.CLIENT_SOCKET_PATHS.name(), dn0);
                c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
              });
      in = fs.open(new Path(FILE));
      FileSystem stock = ReadPathType.STOCK_TCP.newFileSystem(dfs, c -> {});
      stockIn = stock.open(new Path(FILE));
      readAllAndCheck(in);
      readAllAndCheck(stockIn);
    } catch (Exception | Error e) {
      tearDown();
      throw e;
    }
  }

  private void writeOnDataNodeOne() throws IOException {
    DataNode dn1 = dfs.cluster().getDataNodes().get(1);
    InetSocketAddress favored = dn1.getXferAddress();
    try (FSDataOutputStream out =
        dfs.fileSystem()
            .create(
                new Path(FILE),
                FsPermission.getFileDefault(),
                true,
                4096,
                (short) 1,
                BLOCK_SIZE,
                null,
                new InetSocketAddress[] {favored})) {
      out.write(data);
    }
    List<LocatedBlock> blocks =
        dfs.fileSystem().getClient().getLocatedBlocks(FILE, 0, LENGTH).getLocatedBlocks();
    for (LocatedBlock lb : blocks) {
      if (lb.getLocations().length != 1
          || lb.getLocations()[0].getXferPort() != dn1.getXferPort()) {
        throw new IllegalStateException(lb.getBlock() + " is not only on DataNode 1");
      }
    }
  }

  private void readAllAndCheck(FSDataInputStream s) throws IOException {
    byte[] buf = new byte[1 << 20];
    for (int pos = 0; pos < LENGTH; pos += buf.length) {
      s.readFully(pos, buf);
      if (!java.util.Arrays.equals(buf, 0, buf.length, data, pos, pos + buf.length)) {
        throw new IllegalStateException(path + " returned wrong bytes at " + pos);
      }
    }
  }

  /** Fd requests DataNode 0 has seen, refused ones included ({@code BlocksGetLocalPathInfo}). */
  long fdRequests() {
    try {
      DataNodeMetrics m = dfs.cluster().getDataNodes().get(0).getMetrics();
      Field f = DataNodeMetrics.class.getDeclaredField("blocksGetLocalPathInfo");
      f.setAccessible(true);
      return ((MutableCounterLong) f.get(m)).value();
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read DataNode 0's BlocksGetLocalPathInfo", e);
    }
  }

  /** Fd requests since the last call (or the trial's start). */
  synchronized long newFdRequests() {
    long now = fdRequests();
    long n = now - fdRequestsCounted;
    fdRequestsCounted = now;
    return n;
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try {
      if (dfs != null && in != null) {
        long asked = fdRequests() - fdRequestsAtStart;
        System.out.printf(
            "%n%s: DataNode 0 received %d fd requests for %d remote blocks over the trial%n",
            path, asked, BLOCKS);
        if (asked > BLOCKS) {
          throw new IllegalStateException(
              path + ": DataNode 0 was asked " + asked + " times for " + BLOCKS + " blocks");
        }
      }
    } finally {
      try {
        if (in != null) {
          in.close();
        }
        if (stockIn != null) {
          stockIn.close();
        }
      } finally {
        ReadPathType.releaseAccessorEngines();
        if (dfs != null) {
          dfs.close();
        }
      }
    }
  }

  /** Fd requests DataNode 0 received during each measured iteration (JMH sums them). */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class FdRequests {
    public long fdRequests;

    @Setup(Level.Iteration)
    public void reset(RemoteReadBenchmark bench) {
      fdRequests = 0;
      bench.iterationCounted.set(false);
    }

    @TearDown(Level.Iteration)
    public void record(RemoteReadBenchmark bench) {
      // Counted by one thread of the iteration; the others report 0, so the sum is the count.
      if (bench.iterationCounted.compareAndSet(false, true)) {
        fdRequests = bench.newFdRequests();
      }
    }
  }

  /** One benchmark thread's buffer and offsets. */
  @State(Scope.Thread)
  public static class ThreadReads {
    byte[] buf;
    long[] offsets;
    int next;

    @Setup(Level.Trial)
    public void setUp(RemoteReadBenchmark bench) {
      buf = new byte[bench.readSize];
      SplittableRandom random = new SplittableRandom(13 + bench.threadSeeds.getAndIncrement());
      offsets = new long[SEQUENCE];
      for (int i = 0; i < SEQUENCE; i++) {
        long off = random.nextLong(LENGTH - bench.readSize);
        offsets[i] = off % 512 == 0 ? off + 1 : off; // not chunk-aligned
      }
    }
  }

  private static byte pread(FSDataInputStream s, ThreadReads t) throws IOException {
    long pos = t.offsets[t.next++ & (SEQUENCE - 1)];
    s.readFully(pos, t.buf, 0, t.buf.length);
    return t.buf[(int) (pos & 511) % t.buf.length];
  }

  @Benchmark
  @Threads(1)
  public byte pread(ThreadReads t, FdRequests counted) throws IOException {
    return pread(in, t);
  }

  @Benchmark
  @Group("pair")
  @GroupThreads(1)
  public byte stock(ThreadReads t) throws IOException {
    return pread(stockIn, t);
  }

  @Benchmark
  @Group("pair")
  @GroupThreads(1)
  public byte scr(ThreadReads t, FdRequests counted) throws IOException {
    return pread(in, t);
  }
}
