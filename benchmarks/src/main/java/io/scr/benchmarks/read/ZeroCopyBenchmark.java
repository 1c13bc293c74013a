package io.scr.benchmarks.read;

import io.scr.core.ScrKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
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

/**
 * Zero-copy reads ({@code read(ByteBufferPool, int, EnumSet)} with {@code SKIP_CHECKSUMS}) against
 * copying reads, page cache warm, one thread, one stream per trial:
 *
 * <ul>
 *   <li>{@code scan1m}: a sequential pass in 1 MiB reads, starting over at the end of the file; a
 *       zero-copy read returns at most up to its block's end (the blocks are 8 MiB, so every read
 *       is a whole 1 MiB). Score: µs per 1 MiB.
 *   <li>{@code random4k}: 4 KiB at seeded uniform random offsets (not chunk-aligned); zero-copy
 *       seeks then reads (twice when the range crosses a block), copying paths pread. Score: µs per
 *       read.
 * </ul>
 *
 * A zero-copy buffer is consumed by loading one byte of each 4 KiB page (so the cost of mapping the
 * pages in is paid, as a reader of the data pays it) and released; a copying read delivers every
 * byte into the caller's array. Competitors ({@link Competitor}): the raw pread limit, stock
 * short-circuit copying and zero-copy (libhadoop, stock DataNode), ScrFileSystem copying (checksums
 * verified, its normal read) and zero-copy (stock short-circuit off, so every zero-copy byte is
 * scr's; checked at setup).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(1)
public class ZeroCopyBenchmark {
  static final int BLOCK_SIZE = 8 << 20;
  static final int BLOCKS = 4;
  static final int SCAN = 1 << 20;
  static final int SMALL = 4096;
  private static final int OFFSETS = 1 << 14;
  private static final int PAGE = 4096;
  private static final String FILE = "/bench/zero-copy";
  private static final EnumSet<ReadOption> SKIP = EnumSet.of(ReadOption.SKIP_CHECKSUMS);

  /** Who reads, and how. */
  public enum Competitor {
    /** The physical limit: pread of the block files, no HDFS client. */
    RAW_PREAD(ReadPathType.RAW_PREAD, false),
    /** Stock short-circuit reads (libhadoop), copying, checksums verified. */
    STOCK_SCR_COPY(ReadPathType.STOCK_SCR_DEFAULT, false),
    /** Stock zero-copy (HDFS-4953, libhadoop): mmap of the block file. */
    STOCK_SCR_ZERO_COPY(ReadPathType.STOCK_SCR_DEFAULT, true),
    /** ScrFileSystem's normal reads, checksums verified. */
    SCR_FILESYSTEM_COPY(ReadPathType.SCR_FILESYSTEM, false),
    /** ScrFileSystem's zero-copy reads. */
    SCR_FILESYSTEM_ZERO_COPY(ReadPathType.SCR_FILESYSTEM, true);

    final ReadPathType path;
    final boolean zeroCopy;

    Competitor(ReadPathType path, boolean zeroCopy) {
      this.path = path;
      this.zeroCopy = zeroCopy;
    }
  }

  @Param({
    "RAW_PREAD",
    "STOCK_SCR_COPY",
    "STOCK_SCR_ZERO_COPY",
    "SCR_FILESYSTEM_COPY",
    "SCR_FILESYSTEM_ZERO_COPY"
  })
  Competitor competitor;

  private BenchFile file;
  private FSDataInputStream in;
  private long[] offsets;
  private int next;
  private final ReadPathType.Buffer scanBuf = new ReadPathType.Buffer(SCAN);
  private final ReadPathType.Buffer smallBuf = new ReadPathType.Buffer(SMALL);

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    file =
        BenchFile.create(
            competitor.path, FILE, BLOCK_SIZE, BLOCKS, c -> {}, ZeroCopyBenchmark::client);
    offsets = file.randomOffsets(SMALL, 16, OFFSETS);
    if (competitor.path != ReadPathType.RAW_PREAD) {
      FileSystem fs = competitor.path.newFileSystem(file.dfs, ZeroCopyBenchmark::client);
      in = fs.open(new Path(FILE));
      if (competitor.zeroCopy) {
        checkZeroCopy();
      }
    }
  }

  /** ScrFileSystem with stock short-circuit off: a zero-copy byte can only be scr's. */
  private static void client(Configuration c) {
    if (ReadPathType.FILE_SYSTEM.equals(c.get("fs.hdfs.impl"))) {
      c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
    }
  }

  /** One checked zero-copy pass: the bytes are the file's and every one came zero-copy. */
  private void checkZeroCopy() throws IOException {
    for (long pos = 0; pos < file.length; ) {
      ByteBuffer b = in.read(null, SCAN, SKIP);
      byte[] got = new byte[b.remaining()];
      b.get(got);
      in.releaseBuffer(b);
      int from = Math.toIntExact(pos);
      if (!java.util.Arrays.equals(got, 0, got.length, file.data, from, from + got.length)) {
        throw new IllegalStateException(competitor + " returned wrong bytes at " + pos);
      }
      pos += got.length;
    }
    long zeroCopied = ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead();
    if (zeroCopied != file.length) {
      throw new IllegalStateException(
          competitor + " read " + zeroCopied + " of " + file.length + " bytes zero-copy");
    }
    in.seek(0);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try {
      if (in != null) {
        in.close();
      }
    } finally {
      if (file != null) {
        file.close();
      }
    }
  }

  /** Loads one byte of each page of {@code b}: what a reader of the data at least pays. */
  private static long touch(ByteBuffer b) {
    long sum = 0;
    for (int i = b.position(); i < b.limit(); i += PAGE) {
      sum += b.get(i);
    }
    return sum + b.get(b.limit() - 1);
  }

  @Benchmark
  public long scan1m() throws IOException {
    if (competitor.path == ReadPathType.RAW_PREAD) {
      file.reader.scan(scanBuf);
      return scanBuf.array()[SCAN - 1];
    }
    if (!competitor.zeroCopy) {
      if (in.getPos() + SCAN > file.length) {
        in.seek(0);
      }
      in.readFully(scanBuf.array(), 0, SCAN);
      return scanBuf.array()[SCAN - 1];
    }
    ByteBuffer b = in.read(null, SCAN, SKIP);
    if (b == null) {
      in.seek(0);
      b = in.read(null, SCAN, SKIP);
    }
    long sum = touch(b);
    in.releaseBuffer(b);
    return sum;
  }

  @Benchmark
  public long random4k() throws IOException {
    long off = offsets[next];
    next = (next + 1) & (OFFSETS - 1);
    if (competitor.path == ReadPathType.RAW_PREAD) {
      file.reader.readFully(off, smallBuf);
      return smallBuf.array()[SMALL - 1];
    }
    if (!competitor.zeroCopy) {
      in.readFully(off, smallBuf.array(), 0, SMALL);
      return smallBuf.array()[SMALL - 1];
    }
    in.seek(off);
    long sum = 0;
    for (int done = 0; done < SMALL; ) {
      ByteBuffer b = in.read(null, SMALL - done, SKIP);
      done += b.remaining();
      sum += touch(b);
      in.releaseBuffer(b);
    }
    return sum;
  }
}
