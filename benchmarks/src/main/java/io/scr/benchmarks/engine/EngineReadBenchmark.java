package io.scr.benchmarks.engine;

import io.scr.core.ScrClient;
import io.scr.core.ScrKeys;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
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
 * The scr engine's hit path against the raw block file, in the same run: a random 4 KiB read at an
 * offset not aligned to checksum chunks, through each {@link EnginePath}. {@code
 * SCR_CLIENT_LEASE_READ} is what ScrFileSystem does per pread once the replica is cached: {@link
 * ScrClient#lease}, read, close. Goals: about 0 B/op on the lease path (the GC profiler's {@code
 * gc.alloc.rate.norm}) and a verified read close to a raw pread.
 *
 * <p>The cluster is one stock DataNode with libhadoop (STOCK_SCR), so the engine gets its fds and
 * shared-memory slots from an unmodified DataNode; the file has {@value #BLOCKS} blocks of {@value
 * #BLOCK_SIZE} bytes, read entirely in setup (page cache warm, replicas cached, bytes checked).
 *
 * <pre>
 * mvn -B -q -pl benchmarks -am install -DskipTests
 * ./scr bench 'io.scr.benchmarks.engine.*'
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(1)
public class EngineReadBenchmark {
  static final int BLOCK_SIZE = 4 << 20;
  static final int BLOCKS = 4;
  static final int READ = 4096;
  private static final int SEQUENCE = 1 << 14;
  private static final String FILE = "/bench/engine";

  @Param({
    "RAW_PREAD",
    "RAW_PREAD_CRC",
    "SCR_CLIENT_LEASE_READ",
    "SCR_CLIENT_LEASE_READ_NO_CHECKSUM",
    "SCR_CLIENT_NEW_LEASE_READ"
  })
  EnginePath path;

  private Fixture fixture;
  private EnginePath.Reader reader;
  private final long[] offsets = new long[SEQUENCE];
  private final byte[] buf = new byte[READ];
  private int next;

  /** The cluster, the file's blocks and the engine, shared by every path. */
  static final class Fixture implements AutoCloseable {
    final MiniDfs dfs;
    final List<LocatedBlock> blocks;
    final long blockSize;
    final ScrClient client;
    final String socketPath;
    final String file;

    Fixture(MiniDfs dfs, String file) throws IOException {
      this.dfs = dfs;
      this.file = file;
      this.blockSize = dfs.blockSize();
      this.blocks =
          dfs.fileSystem().getClient().getLocatedBlocks(file, 0, Long.MAX_VALUE).getLocatedBlocks();
      Configuration conf = dfs.clientConf();
      conf.set(ScrKeys.CLIENT_CONTEXT.name(), "engine-bench");
      this.client = ScrClient.acquire(conf);
      this.socketPath = client.socketPathFor(blocks.get(0).getLocations()[0]);
      if (socketPath == null) {
        client.close();
        throw new IOException("no local socket path for " + blocks.get(0).getLocations()[0]);
      }
    }

    @Override
    public void close() {
      client.close();
    }
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    StockNative.requireAvailable();
    MiniDfs dfs = MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.STOCK_SCR).start();
    long length = (long) BLOCK_SIZE * BLOCKS;
    byte[] written = dfs.writeRandomFile(FILE, (int) length, 11);
    fixture = new Fixture(dfs, FILE);
    reader = path.open(fixture);
    SplittableRandom random = new SplittableRandom(13);
    for (int i = 0; i < SEQUENCE; i++) {
      // Within one block (a read never spans two), unaligned like HBase block offsets, so the
      // verified paths read the covering chunks.
      long off = random.nextLong(BLOCK_SIZE - READ);
      if (off % 512 == 0) {
        off++;
      }
      offsets[i] = (long) random.nextInt(BLOCKS) * BLOCK_SIZE + off;
    }
    // Warm the page cache and the replica cache, and prove the path returns the written bytes.
    byte[] whole = new byte[READ];
    for (long block = 0; block < length; block += BLOCK_SIZE) {
      for (long pos = block; pos + READ <= block + BLOCK_SIZE; pos += READ - 1) {
        reader.readFully(pos, whole);
        for (int i = 0; i < READ; i++) {
          if (whole[i] != written[(int) pos + i]) {
            throw new IllegalStateException(path + " returned wrong bytes at " + (pos + i));
          }
        }
      }
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (reader != null) {
      reader.close();
    }
    if (fixture != null) {
      fixture.close();
      fixture.dfs.close();
    }
  }

  @Benchmark
  public byte read4k() throws IOException {
    long pos = offsets[next++ & (SEQUENCE - 1)];
    reader.readFully(pos, buf);
    return buf[(int) (pos & (READ - 1))];
  }
}
