package io.scr.core.hdfs.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.io.ByteBufferPool;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Zero-copy reads ({@code HasEnhancedByteBufferAccess}) behave as stock's do. The cases of Hadoop's
 * {@code TestEnhancedByteBufferAccess} that apply to a client (not those on the stock cache's
 * internals, nor a 2 GiB block), with the same expectations for every {@link ReadPath}: a zero-copy
 * read within a block, reads that stop at the block's end, checksums skipped or no zero copy, the
 * copying fallback through the caller's pool, end of file, release, and the read statistics.
 * Concrete classes pick the cluster and the paths (stock's own with libhadoop is the reference).
 *
 * <p>On the {@code SCR_FILESYSTEM} path stock short-circuit is off, so a zero-copy byte counted
 * there can only be scr's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractZeroCopyConformanceTest {
  /** Small blocks make the block boundary cheap to reach (128 checksum chunks). */
  protected static final int BLOCK_SIZE = 64 * 1024;

  private static final int LENGTH = 3 * BLOCK_SIZE + 1000;
  private static final EnumSet<ReadOption> SKIP = EnumSet.of(ReadOption.SKIP_CHECKSUMS);
  private static final EnumSet<ReadOption> NONE = EnumSet.noneOf(ReadOption.class);

  private final Path file = new Path("/zero-copy/" + getClass().getSimpleName());
  private byte[] data;

  /** The cluster this class runs on. */
  protected abstract MiniDfs dfs();

  /** The read paths to check on {@link #dfs()}. */
  protected abstract List<ReadPath> paths();

  @BeforeAll
  void writeFile() throws IOException {
    data = dfs().writeRandomFile(file.toString(), LENGTH, new Random().nextLong());
  }

  private byte[] expected(long from, int length) {
    return Arrays.copyOfRange(data, (int) from, (int) from + length);
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  private static ReadStatistics stats(FSDataInputStream in) {
    return ((HdfsDataInputStream) in).getReadStatistics();
  }

  /** A pool that hands out fresh buffers and records what it got back. */
  private static final class RecordingPool implements ByteBufferPool {
    final List<ByteBuffer> returned = new ArrayList<>();
    int handedOut;

    @Override
    public ByteBuffer getBuffer(boolean direct, int length) {
      handedOut++;
      return direct ? ByteBuffer.allocateDirect(length) : ByteBuffer.allocate(length);
    }

    @Override
    public void putBuffer(ByteBuffer buffer) {
      returned.add(buffer);
    }
  }

  // stock: testZeroCopyReads
  @ParameterizedTest
  @MethodSource("paths")
  void zeroCopyReadsWithinABlockAreReadOnlyAndCounted(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    try (FSDataInputStream in = fs.open(file)) {
      ByteBuffer first = in.read(null, 4096, SKIP);
      assertNotNull(first);
      assertEquals(4096, first.remaining());
      assertTrue(first.isReadOnly(), "a zero-copy buffer is read-only");
      assertArrayEquals(expected(0, 4096), bytes(first));
      assertEquals(4096, in.getPos());
      ByteBuffer second = in.read(null, 8192, SKIP);
      assertEquals(8192, second.remaining());
      assertArrayEquals(expected(4096, 8192), bytes(second));
      assertArrayEquals(expected(0, 4096), bytes(first), "the first buffer is still valid");
      ReadStatistics stats = stats(in);
      assertEquals(4096 + 8192, stats.getTotalBytesRead());
      assertEquals(4096 + 8192, stats.getTotalZeroCopyBytesRead());
      assertEquals(4096 + 8192, stats.getTotalShortCircuitBytesRead());
      in.releaseBuffer(first);
      in.releaseBuffer(second);
      // A stateful read goes on where the zero-copy reads stopped, and a zero-copy read after it.
      byte[] next = new byte[100];
      in.readFully(next);
      assertArrayEquals(expected(12288, 100), next);
      ByteBuffer third = in.read(null, 50, SKIP);
      assertArrayEquals(expected(12388, 50), bytes(third));
      in.releaseBuffer(third);
    }
  }

  // stock: testShortZeroCopyReads
  @ParameterizedTest
  @MethodSource("paths")
  void aZeroCopyReadStopsAtTheBlockEnd(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    try (FSDataInputStream in = fs.open(file)) {
      ByteBuffer b = in.read(null, 2 * BLOCK_SIZE, SKIP);
      assertEquals(BLOCK_SIZE, b.remaining());
      assertArrayEquals(expected(0, BLOCK_SIZE), bytes(b));
      in.releaseBuffer(b);
      b = in.read(null, BLOCK_SIZE + 1, SKIP);
      assertEquals(BLOCK_SIZE, b.remaining());
      assertArrayEquals(expected(BLOCK_SIZE, BLOCK_SIZE), bytes(b));
      in.releaseBuffer(b);
      in.seek(3L * BLOCK_SIZE - 100);
      b = in.read(null, 1000, SKIP);
      assertEquals(100, b.remaining(), "never across a block");
      assertArrayEquals(expected(3L * BLOCK_SIZE - 100, 100), bytes(b));
      in.releaseBuffer(b);
      b = in.read(null, 1 << 20, SKIP);
      assertEquals(1000, b.remaining(), "the last block ends at the end of the file");
      assertArrayEquals(expected(3L * BLOCK_SIZE, 1000), bytes(b));
      in.releaseBuffer(b);
      assertEquals(LENGTH, in.getPos());
      assertNull(in.read(null, 10, SKIP), "at the end of the file");
      assertEquals(2 * BLOCK_SIZE + 1100, stats(in).getTotalZeroCopyBytesRead());
    }
  }

  // stock: testZeroCopyReadsNoFallback
  @ParameterizedTest
  @MethodSource("paths")
  void withoutSkipChecksumsOrAPoolAZeroCopyReadIsUnsupported(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    try (FSDataInputStream in = fs.open(file)) {
      assertThrows(UnsupportedOperationException.class, () -> in.read(null, BLOCK_SIZE + 1, NONE));
      assertEquals(0, in.getPos(), "a refused read moves nothing");
      assertEquals(0, stats(in).getTotalBytesRead());
      ByteBuffer b = in.read(null, BLOCK_SIZE, SKIP);
      assertEquals(BLOCK_SIZE, b.remaining());
      assertArrayEquals(expected(0, BLOCK_SIZE), bytes(b));
      assertEquals(BLOCK_SIZE, stats(in).getTotalZeroCopyBytesRead());
      in.releaseBuffer(b);
    }
  }

  // stock: testHdfsFallbackReads (through the stream's read(ByteBufferPool, ...))
  @ParameterizedTest
  @MethodSource("paths")
  void withoutSkipChecksumsItCopiesThroughThePoolAcrossBlocks(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    RecordingPool pool = new RecordingPool();
    try (FSDataInputStream in = fs.open(file)) {
      in.seek(BLOCK_SIZE - 100);
      ByteBuffer copy = in.read(pool, 5000, NONE);
      assertEquals(1, pool.handedOut);
      assertEquals(5000, copy.remaining(), "a copy is not cut at the block's end");
      assertArrayEquals(expected(BLOCK_SIZE - 100, 5000), bytes(copy));
      assertEquals(BLOCK_SIZE + 4900, in.getPos());
      ReadStatistics stats = stats(in);
      assertEquals(5000, stats.getTotalBytesRead());
      assertEquals(0, stats.getTotalZeroCopyBytesRead());
      assertEquals(5000, stats.getTotalShortCircuitBytesRead(), "copied by short-circuit reads");
      in.releaseBuffer(copy);
      assertEquals(1, pool.returned.size());
      assertSame(copy, pool.returned.get(0), "release gives a copy back to its pool");
      in.seek(LENGTH - 10);
      ByteBuffer tail = in.read(pool, 9_999_999, NONE);
      assertEquals(10, tail.remaining());
      in.releaseBuffer(tail);
      // (Without a pool stock answers null here only when it holds no block reader; its
      // UnsupportedOperationException after a read to the end is not part of the contract.)
      assertNull(in.read(pool, 10, NONE), "at the end of the file");
    }
  }

  // stock: testZeroCopyReads with verification off (BlockReaderLocal anchors only when verifying)
  @ParameterizedTest
  @MethodSource("paths")
  void withVerificationOffNoOptionIsNeeded(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    fs.setVerifyChecksum(false);
    try (FSDataInputStream in = fs.open(file)) {
      in.seek(BLOCK_SIZE + 7);
      ByteBuffer b = in.read(null, 333, NONE);
      assertEquals(333, b.remaining());
      assertArrayEquals(expected(BLOCK_SIZE + 7, 333), bytes(b));
      assertEquals(333, stats(in).getTotalZeroCopyBytesRead());
      in.releaseBuffer(b);
    }
  }

  // stock: testClientMmapDisable
  @ParameterizedTest
  @MethodSource("paths")
  void withClientMmapDisabledItAlwaysCopies(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs(), c -> c.setBoolean("dfs.client.mmap.enabled", false));
    RecordingPool pool = new RecordingPool();
    try (FSDataInputStream in = fs.open(file)) {
      assertThrows(UnsupportedOperationException.class, () -> in.read(null, 1, SKIP));
      ByteBuffer copy = in.read(pool, 4096, SKIP);
      assertEquals(4096, copy.remaining());
      assertArrayEquals(expected(0, 4096), bytes(copy));
      assertEquals(0, stats(in).getTotalZeroCopyBytesRead());
      in.releaseBuffer(copy);
      assertSame(copy, pool.returned.get(0));
    }
  }

  // stock: releaseBuffer's contract, and the empty read
  @ParameterizedTest
  @MethodSource("paths")
  void releaseTakesBackOnlyThisStreamsBuffersOnce(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    try (FSDataInputStream in = fs.open(file);
        FSDataInputStream other = fs.open(file)) {
      ByteBuffer empty = in.read(null, 0, SKIP);
      assertEquals(0, empty.remaining());
      in.releaseBuffer(empty);
      assertThrows(IllegalArgumentException.class, () -> in.read(null, -1, SKIP));
      ByteBuffer b = in.read(null, 10, SKIP);
      assertThrows(IllegalArgumentException.class, () -> other.releaseBuffer(b));
      assertThrows(
          IllegalArgumentException.class, () -> in.releaseBuffer(ByteBuffer.allocateDirect(10)));
      in.releaseBuffer(b);
      assertThrows(IllegalArgumentException.class, () -> in.releaseBuffer(b), "released twice");
    }
  }
}
