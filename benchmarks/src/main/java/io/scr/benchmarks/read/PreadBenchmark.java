package io.scr.benchmarks.read;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.util.SplittableRandom;
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
 * Random 4 KiB positional reads with checksums verified, HBase's hot path, through every {@link
 * ReadPathType} in the same run: the raw {@code FileChannel} pread of the block file, stock
 * short-circuit reads with three buffer sizes, stock TCP, the scr accessor and {@code
 * ScrFileSystem}. Targets: ScrFileSystem at most 1.5x RAW_PREAD, the accessor at most 3x, and about
 * 0 B/op for ScrFileSystem under {@code -prof gc}.
 *
 * <p>The cluster is one DataNode in STOCK_SCR mode (stock libhadoop, so stock short-circuit reads
 * work in this JVM); the file has {@value #BLOCKS} blocks of {@value #BLOCK_SIZE} bytes and is read
 * once in setup so it sits in the page cache; offsets are a pre-computed uniform random sequence,
 * not aligned to checksum chunks.
 *
 * <pre>
 * mvn -B -q -pl benchmarks -am package -DskipTests
 * java $FLAGS -Djava.library.path=benchmarks/target/native \
 *     -cp benchmarks/target/benchmarks-0.1.0-SNAPSHOT.jar:$(cat benchmarks/target/classpath.txt) \
 *     org.openjdk.jmh.Main 'io.scr.benchmarks.read.*' -f 1 -wi 3 -w 2s -i 5 -r 2s -prof gc \
 *     -jvmArgsAppend "$FLAGS -Djava.library.path=benchmarks/target/native"
 * </pre>
 *
 * where {@code FLAGS} holds the {@code --add-opens} Hadoop needs on JDK 17 (see
 * docs/benchmarks.md).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(1)
public class PreadBenchmark {
  static final int BLOCK_SIZE = 4 << 20;
  static final int BLOCKS = 4;
  static final int READ = 4096;
  private static final int SEQUENCE = 1 << 14;
  private static final String FILE = "/bench/pread";

  @Param({
    "RAW_PREAD",
    "STOCK_SCR_DEFAULT",
    "STOCK_SCR_HBASE",
    "STOCK_SCR_TUNED",
    "STOCK_TCP",
    "SCR_ACCESSOR",
    "SCR_FILESYSTEM"
  })
  ReadPathType path;

  private MiniDfs dfs;
  private ReadPathType.Reader reader;
  private final long[] offsets = new long[SEQUENCE];
  private final byte[] buf = new byte[READ];
  private int next;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    StockNative.requireAvailable();
    dfs = MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.STOCK_SCR).start();
    long length = (long) BLOCK_SIZE * BLOCKS;
    byte[] written = dfs.writeRandomFile(FILE, (int) length, 11);
    reader = path.open(dfs, FILE);
    SplittableRandom random = new SplittableRandom(13);
    for (int i = 0; i < SEQUENCE; i++) {
      offsets[i] = random.nextLong(length - READ);
    }
    // Warm the page cache and prove the path returns the written bytes before measuring.
    byte[] whole = new byte[READ];
    for (long pos = 0; pos + READ <= length; pos += READ) {
      reader.readFully(pos, whole);
      for (int i = 0; i < READ; i++) {
        if (whole[i] != written[(int) pos + i]) {
          throw new IllegalStateException(path + " returned wrong bytes at " + (pos + i));
        }
      }
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (reader != null) {
      ReadPathType.closeQuietly(reader);
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  @Benchmark
  public byte pread4k() throws IOException {
    long pos = offsets[next++ & (SEQUENCE - 1)];
    reader.readFully(pos, buf);
    return buf[(int) (pos & (READ - 1))];
  }
}
