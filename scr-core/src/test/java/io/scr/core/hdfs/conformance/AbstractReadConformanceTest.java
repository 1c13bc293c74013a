package io.scr.core.hdfs.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.testing.MiniDfs;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileRange;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The read conformance suite: every read method of an HDFS input stream, over files whose sizes sit
 * on and around checksum-chunk and block boundaries, must return exactly the bytes that were
 * written, whichever {@link ReadPath} serves them. Concrete subclasses pick the cluster (one per
 * class: a start costs seconds) and the paths to run on it.
 *
 * <p>Randomness is seeded from {@code -Dscr.conformance.seed} (default: the clock); a failing test
 * prints the seed so the run can be repeated.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractReadConformanceTest {
  /** Small blocks make block boundaries cheap to reach; 128 chunks of 512 bytes. */
  protected static final int BLOCK_SIZE = 64 * 1024;

  private static final int CHUNK = 512;
  private static final long SEED = Long.getLong("scr.conformance.seed", System.nanoTime());

  @RegisterExtension
  final TestWatcher seedReporter =
      new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
          System.err.printf(
              "%s failed; repeat with -Dscr.conformance.seed=%d%n", context.getDisplayName(), SEED);
        }
      };

  /** Written files: path → contents, in size order. */
  private final Map<Path, byte[]> files = new LinkedHashMap<>();

  /** The cluster this class runs on. */
  protected abstract MiniDfs dfs();

  /** The read paths to check on {@link #dfs()}. */
  protected abstract List<ReadPath> paths();

  @BeforeAll
  void writeFiles() throws IOException {
    int[] sizes = {
      0,
      1,
      CHUNK - 1,
      CHUNK,
      CHUNK + 1,
      BLOCK_SIZE - 1,
      BLOCK_SIZE,
      BLOCK_SIZE + 1,
      3 * BLOCK_SIZE + 2 * CHUNK + 17
    };
    Random random = new Random(SEED);
    for (int size : sizes) {
      Path path = new Path("/conformance/" + getClass().getSimpleName() + "/f" + size);
      files.put(path, dfs().writeRandomFile(path.toString(), size, random.nextLong()));
    }
  }

  /**
   * The accessor's engine lives as long as its client context; close it before the cluster's leak
   * check (ScrFileSystem gives its reference back when its file system closes).
   */
  @AfterAll
  void releaseAccessorEngines() {
    if (paths().contains(ReadPath.SCR_ACCESSOR)) {
      ScrReplicaAccessorBuilder.releaseAll();
    }
  }

  // ---------------------------------------------------------------- stateful reads

  @ParameterizedTest
  @MethodSource("paths")
  void sequentialByteArrayReads(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 1);
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      byte[] actual = new byte[expected.length];
      try (FSDataInputStream in = fs.open(file.getKey())) {
        int done = 0;
        while (done < expected.length) {
          int want = 1 + random.nextInt(Math.min(3 * CHUNK, expected.length - done));
          int n = in.read(actual, done, want);
          assertTrue(n > 0 && n <= want, () -> "read returned " + n + " for " + want);
          done += n;
          assertEquals(done, in.getPos(), "getPos after read");
        }
        assertEquals(-1, in.read(new byte[8], 0, 8), "read at EOF");
        assertEquals(-1, in.read(), "read() at EOF");
        assertEquals(0, in.available(), "available at EOF");
      }
      assertArrayEquals(expected, actual, describe(path, file.getKey()));
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void singleByteReadsAroundBoundaries(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      try (FSDataInputStream in = fs.open(file.getKey())) {
        for (long boundary : boundaries(expected.length)) {
          for (long pos = Math.max(0, boundary - 2);
              pos < Math.min(expected.length, boundary + 2);
              pos++) {
            in.seek(pos);
            assertEquals(expected[(int) pos] & 0xff, in.read(), describe(path, file.getKey(), pos));
            assertEquals(pos + 1, in.getPos());
          }
        }
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void seekSkipAndRead(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 2);
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      if (expected.length == 0) {
        try (FSDataInputStream in = fs.open(file.getKey())) {
          in.seek(0);
          assertEquals(-1, in.read());
          assertThrows(EOFException.class, () -> in.seek(1));
        }
        continue;
      }
      try (FSDataInputStream in = fs.open(file.getKey())) {
        for (int i = 0; i < 60; i++) {
          long pos = random.nextInt(expected.length);
          if (random.nextBoolean()) {
            in.seek(pos);
          } else {
            long from = in.getPos();
            if (from > pos) {
              in.seek(pos);
            } else {
              assertEquals(pos - from, in.skip(pos - from), "skip");
            }
          }
          assertEquals(pos, in.getPos());
          assertEquals(expected.length - pos, in.available(), "available");
          int len = 1 + random.nextInt(Math.min(2 * CHUNK, expected.length - (int) pos));
          byte[] buf = new byte[len];
          in.readFully(buf);
          assertArrayEquals(slice(expected, pos, len), buf, describe(path, file.getKey(), pos));
          assertEquals(pos + len, in.getPos());
        }
        assertThrows(EOFException.class, () -> in.seek(expected.length + 1L));
        assertThrows(EOFException.class, () -> in.seek(-1));
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void statefulByteBufferReads(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 3);
    for (boolean direct : new boolean[] {false, true}) {
      for (Map.Entry<Path, byte[]> file : files.entrySet()) {
        byte[] expected = file.getValue();
        ByteBuffer all = ByteBuffer.allocate(expected.length);
        try (FSDataInputStream in = fs.open(file.getKey())) {
          while (all.hasRemaining()) {
            int want = 1 + random.nextInt(Math.min(3 * CHUNK, all.remaining()));
            ByteBuffer buf = direct ? ByteBuffer.allocateDirect(want) : ByteBuffer.allocate(want);
            int n = in.read(buf);
            assertTrue(n > 0 && n == buf.position(), "read(ByteBuffer) returned " + n);
            buf.flip();
            all.put(buf);
          }
          assertEquals(-1, in.read(ByteBuffer.allocate(4)), "read(ByteBuffer) at EOF");
        }
        assertArrayEquals(
            expected, all.array(), describe(path, file.getKey()) + " direct=" + direct);
      }
    }
  }

  // ---------------------------------------------------------------- positional reads

  @ParameterizedTest
  @MethodSource("paths")
  void positionalReadsAcrossChunkAndBlockBoundaries(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 4);
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      try (FSDataInputStream in = fs.open(file.getKey())) {
        for (long pos : offsets(expected.length, random)) {
          int len = randomLength(random);
          int off = random.nextInt(7);
          byte[] buf = new byte[off + len + 3];
          int n = in.read(pos, buf, off, len);
          int want = (int) Math.min(len, expected.length - pos);
          if (want <= 0) {
            assertEquals(-1, n, "pread at EOF");
            continue;
          }
          assertEquals(want, n, describe(path, file.getKey(), pos) + " pread length");
          assertArrayEquals(
              slice(expected, pos, n), slice(buf, off, n), describe(path, file.getKey(), pos));
          assertEquals(0, in.getPos(), "pread must not move the stream");
        }
        assertEquals(0, in.read(0, new byte[1], 0, 0), "zero-length pread");
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void readFullyPositional(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 5);
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      try (FSDataInputStream in = fs.open(file.getKey())) {
        byte[] whole = new byte[expected.length];
        in.readFully(0, whole);
        assertArrayEquals(expected, whole, describe(path, file.getKey()));
        for (long pos : offsets(expected.length, random)) {
          int len = (int) Math.min(randomLength(random), expected.length - pos);
          if (len <= 0) {
            continue;
          }
          byte[] buf = new byte[len];
          in.readFully(pos, buf, 0, len);
          assertArrayEquals(slice(expected, pos, len), buf, describe(path, file.getKey(), pos));
        }
        assertThrows(
            EOFException.class,
            () -> in.readFully(Math.max(0, expected.length - 3), new byte[4]),
            "readFully past EOF");
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void byteBufferPositionalReads(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 6);
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      byte[] expected = file.getValue();
      try (FSDataInputStream in = fs.open(file.getKey())) {
        assertTrue(in.hasCapability(StreamCapabilities.PREADBYTEBUFFER), "in:preadbytebuffer");
        for (long pos : offsets(expected.length, random)) {
          boolean direct = random.nextBoolean();
          int len = randomLength(random);
          ByteBuffer buf =
              direct ? ByteBuffer.allocateDirect(len + 8) : ByteBuffer.allocate(len + 8);
          buf.position(3).limit(3 + len);
          int want = (int) Math.min(len, expected.length - pos);
          if (want <= 0) {
            assertEquals(-1, in.read(pos, buf), "pread(ByteBuffer) at EOF");
            continue;
          }
          if (random.nextBoolean()) {
            int n = in.read(pos, buf);
            assertEquals(want, n, describe(path, file.getKey(), pos) + " direct=" + direct);
          } else {
            buf.limit(3 + want);
            in.readFully(pos, buf);
          }
          assertEquals(3 + want, buf.position(), "buffer position after pread");
          buf.flip().position(3);
          byte[] got = new byte[want];
          buf.get(got);
          assertArrayEquals(
              slice(expected, pos, want),
              got,
              describe(path, file.getKey(), pos) + " direct=" + direct);
        }
        assertThrows(
            EOFException.class,
            () -> in.readFully(Math.max(0, expected.length - 3), ByteBuffer.allocate(4)));
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void vectoredReads(ReadPath path) throws Exception {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 7);
    for (boolean direct : new boolean[] {false, true}) {
      IntFunction<ByteBuffer> allocate = direct ? ByteBuffer::allocateDirect : ByteBuffer::allocate;
      for (Map.Entry<Path, byte[]> file : files.entrySet()) {
        byte[] expected = file.getValue();
        if (expected.length < 2) {
          continue;
        }
        List<FileRange> ranges = new ArrayList<>();
        long pos = random.nextInt(Math.min(expected.length / 2, 2 * CHUNK));
        while (pos < expected.length && ranges.size() < 8) {
          int len = (int) Math.min(1 + random.nextInt(3 * CHUNK), expected.length - pos);
          ranges.add(FileRange.createFileRange(pos, len));
          pos += len + random.nextInt(BLOCK_SIZE / 2);
        }
        try (FSDataInputStream in = fs.open(file.getKey())) {
          in.readVectored(ranges, allocate);
          for (FileRange range : ranges) {
            ByteBuffer buf = range.getData().get(30, TimeUnit.SECONDS);
            byte[] got = new byte[buf.remaining()];
            buf.get(got);
            assertArrayEquals(
                slice(expected, range.getOffset(), range.getLength()),
                got,
                describe(path, file.getKey(), range.getOffset()) + " vectored direct=" + direct);
          }
        }
      }
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void preadsDoNotDisturbStatefulPosition(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 8);
    byte[] expected = largest();
    try (FSDataInputStream in = fs.open(largestPath())) {
      byte[] stateful = new byte[expected.length];
      int done = 0;
      while (done < expected.length) {
        int n =
            in.read(
                stateful, done, Math.min(1 + random.nextInt(4 * CHUNK), expected.length - done));
        done += n;
        long pos = random.nextInt(expected.length);
        int len = (int) Math.min(1 + random.nextInt(2 * CHUNK), expected.length - pos);
        byte[] buf = new byte[len];
        in.readFully(pos, buf);
        assertArrayEquals(slice(expected, pos, len), buf, describe(path, largestPath(), pos));
        assertEquals(done, in.getPos(), "pread moved the stateful position");
      }
      assertArrayEquals(expected, stateful, describe(path, largestPath()));
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void concurrentPreadsOnOneStream(ReadPath path) throws Exception {
    FileSystem fs = path.open(dfs());
    byte[] expected = largest();
    int threads = 4;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (FSDataInputStream in = fs.open(largestPath())) {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Random random = random(path, 100 + t);
        results.add(
            pool.submit(
                () -> {
                  start.await();
                  int checked = 0;
                  for (int i = 0; i < 300; i++) {
                    long pos = random.nextInt(expected.length);
                    int len = (int) Math.min(randomLength(random), expected.length - pos);
                    byte[] buf = new byte[len];
                    if (random.nextBoolean()) {
                      in.readFully(pos, buf);
                    } else {
                      ByteBuffer bb = ByteBuffer.allocateDirect(len);
                      in.readFully(pos, bb);
                      bb.flip().get(buf);
                    }
                    assertArrayEquals(
                        slice(expected, pos, len), buf, describe(path, largestPath(), pos));
                    checked++;
                  }
                  return checked;
                }));
      }
      start.countDown();
      for (Future<Integer> result : results) {
        assertEquals(300, result.get(2, TimeUnit.MINUTES));
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(1, TimeUnit.MINUTES));
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void checksumsOffReturnsTheSameBytes(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    fs.setVerifyChecksum(false);
    Random random = random(path, 9);
    byte[] expected = largest();
    try (FSDataInputStream in = fs.open(largestPath())) {
      for (long pos : offsets(expected.length, random)) {
        int len = (int) Math.min(randomLength(random), expected.length - pos);
        if (len <= 0) {
          continue;
        }
        byte[] buf = new byte[len];
        in.readFully(pos, buf);
        assertArrayEquals(slice(expected, pos, len), buf, describe(path, largestPath(), pos));
      }
    }
  }

  // ---------------------------------------------------------------- stream contract

  @ParameterizedTest
  @MethodSource("paths")
  void readStatisticsCountShortCircuitBytes(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    byte[] expected = largest();
    try (FSDataInputStream raw = fs.open(largestPath())) {
      assertTrue(raw instanceof HdfsDataInputStream, "HBase checks instanceof HdfsDataInputStream");
      HdfsDataInputStream in = (HdfsDataInputStream) raw;
      byte[] buf = new byte[expected.length];
      in.readFully(0, buf, 0, expected.length / 2);
      in.seek(expected.length / 2);
      in.readFully(buf, expected.length / 2, expected.length - expected.length / 2);
      assertArrayEquals(expected, buf, describe(path, largestPath()));
      ReadStatistics stats = in.getReadStatistics();
      assertEquals(expected.length, stats.getTotalBytesRead(), "total bytes");
      long expectedShortCircuit = path.shortCircuitsLocalReads() ? expected.length : 0;
      assertEquals(
          expectedShortCircuit, stats.getTotalShortCircuitBytesRead(), "short-circuit bytes");
      assertTrue(stats.getTotalLocalBytesRead() >= stats.getTotalShortCircuitBytesRead());
      in.clearReadStatistics();
      assertEquals(0, in.getReadStatistics().getTotalBytesRead(), "after clearReadStatistics");
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void capabilitiesReadaheadDropBehindAndUnbuffer(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    Random random = random(path, 10);
    byte[] expected = largest();
    try (FSDataInputStream in = fs.open(largestPath())) {
      for (String capability :
          new String[] {
            StreamCapabilities.READAHEAD,
            StreamCapabilities.DROPBEHIND,
            StreamCapabilities.UNBUFFER,
            StreamCapabilities.READBYTEBUFFER,
            StreamCapabilities.PREADBYTEBUFFER
          }) {
        assertTrue(in.hasCapability(capability), capability);
      }
      in.setReadahead(0L);
      in.setDropBehind(true);
      for (int i = 0; i < 20; i++) {
        long pos = random.nextInt(expected.length);
        int len = (int) Math.min(randomLength(random), expected.length - pos);
        byte[] buf = new byte[len];
        if (random.nextBoolean()) {
          in.readFully(pos, buf);
        } else {
          in.seek(pos);
          in.readFully(buf);
        }
        assertArrayEquals(slice(expected, pos, len), buf, describe(path, largestPath(), pos));
        in.unbuffer();
        if (i == 10) {
          in.setReadahead(1L << 20);
          in.setDropBehind(false);
        }
      }
      InputStream wrapped = in.getWrappedStream();
      assertTrue(
          wrapped instanceof org.apache.hadoop.fs.CanUnbuffer, "HBase unbuffers via instanceof");
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void closedStreamRejectsReads(ReadPath path) throws IOException {
    FileSystem fs = path.open(dfs());
    FSDataInputStream in = fs.open(largestPath());
    in.read(0, new byte[16], 0, 16);
    in.close();
    in.close(); // idempotent
    assertThrows(IOException.class, () -> in.read(0, new byte[16], 0, 16));
    assertThrows(IOException.class, () -> in.read(new byte[16], 0, 16));
  }

  // ---------------------------------------------------------------- edge parity with stock

  /**
   * The edge table: every read method with empty buffers (a {@code byte[0]}, a heap or direct
   * {@code ByteBuffer} with nothing remaining), zero lengths, and at, just before and past the end
   * of files whose ends sit mid-chunk, on a chunk and on a block boundary. Each case runs on a
   * fresh stream of this path and of the stock TCP stream on the same cluster, and the outcomes
   * must be equal value for value: what the call returned (or the exception type it threw), the
   * bytes it put into the buffer, the buffer's position and limit, and the stream's position
   * afterwards.
   */
  @ParameterizedTest
  @MethodSource("paths")
  void edgeCasesMatchStockValueForValue(ReadPath path) throws IOException {
    FileSystem stock = ReadPath.STOCK_TCP.open(dfs());
    FileSystem fs = path.open(dfs());
    List<String> diffs = new ArrayList<>();
    int cases = 0;
    for (Map.Entry<Path, byte[]> file : files.entrySet()) {
      int length = file.getValue().length;
      if (!EDGE_FILE_SIZES.contains(length)) {
        continue;
      }
      for (EdgeCase c : edgeCases(length)) {
        cases++;
        String want = c.outcome(stock, file.getKey());
        String got = c.outcome(fs, file.getKey());
        if (!want.equals(got)) {
          diffs.add(
              String.format(
                  "%s, file of %d bytes: stock %s; %s %s", c.name, length, want, path, got));
        }
      }
    }
    assertTrue(
        diffs.isEmpty(),
        path
            + " differs from stock (STOCK_TCP) in "
            + diffs.size()
            + " of "
            + cases
            + " edge cases:\n  "
            + String.join("\n  ", diffs));
  }

  /** Ends of file mid-chunk, on a chunk, on a block boundary and just past one; and empty. */
  private static final List<Integer> EDGE_FILE_SIZES =
      List.of(0, 1, CHUNK + 1, BLOCK_SIZE, BLOCK_SIZE + 1);

  /** A call on a stream that was seeked to {@link EdgeCase#seekTo}; returns what it observed. */
  @FunctionalInterface
  private interface EdgeOp {
    String run(FSDataInputStream in) throws Exception;
  }

  /** One row of the edge table. */
  private static final class EdgeCase {
    final String name;
    final long seekTo;
    final EdgeOp op;

    EdgeCase(String name, long seekTo, EdgeOp op) {
      this.name = name;
      this.seekTo = seekTo;
      this.op = op;
    }

    /** What the call did on a fresh stream of {@code fs}: result or exception type, then getPos. */
    String outcome(FileSystem fs, Path file) throws IOException {
      try (FSDataInputStream in = fs.open(file)) {
        in.seek(seekTo);
        String result;
        try {
          result = op.run(in);
        } catch (Exception e) {
          Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
          result = "threw " + t.getClass().getName();
        }
        return result + ", stream at " + in.getPos() + publicState((HdfsDataInputStream) in);
      }
    }
  }

  /**
   * What {@link HdfsDataInputStream} tells about the stream after a call: its current block and
   * DataNode (set by stateful reads, not by positional ones), its visible length, its blocks, and
   * the bytes its read statistics counted.
   */
  private static String publicState(HdfsDataInputStream in) throws IOException {
    org.apache.hadoop.hdfs.protocol.DatanodeInfo dn = in.getCurrentDatanode();
    StringBuilder blocks = new StringBuilder();
    try {
      for (org.apache.hadoop.hdfs.protocol.LocatedBlock lb : in.getAllBlocks()) {
        blocks.append(' ').append(lb.getBlock()).append('+').append(lb.getStartOffset());
      }
    } catch (IOException e) {
      blocks.append(" threw ").append(e.getClass().getName()); // stock's, for an empty file
    }
    return ", current block "
        + in.getCurrentBlock()
        + " on "
        + (dn == null ? null : dn.getXferAddr())
        + ", visible length "
        + in.getVisibleLength()
        + ", blocks ["
        + blocks
        + " ], bytes counted "
        + in.getReadStatistics().getTotalBytesRead();
  }

  /** The edge table for a file of {@code length} bytes. */
  private static List<EdgeCase> edgeCases(int length) {
    List<EdgeCase> out = new ArrayList<>();
    // Stateful reads, from positions the stream can seek to: start, middle, last byte, EOF.
    for (long at :
        new TreeSet<>(List.of(0L, length / 2L, Math.max(0L, length - 1L), (long) length))) {
      String where = "at " + at;
      out.add(new EdgeCase("read() " + where, at, in -> "returned " + in.read()));
      out.add(
          new EdgeCase(
              "read(byte[0], 0, 0) " + where, at, in -> bytes(in.read(new byte[0], 0, 0), null)));
      out.add(
          new EdgeCase(
              "read(byte[8], 0, 0) " + where,
              at,
              in -> {
                byte[] b = new byte[8];
                return bytes(in.read(b, 0, 0), b);
              }));
      out.add(
          new EdgeCase(
              "read(byte[8], 8, 0) " + where,
              at,
              in -> {
                byte[] b = new byte[8];
                return bytes(in.read(b, 8, 0), b);
              }));
      out.add(
          new EdgeCase(
              "read(byte[8], 0, 8) " + where,
              at,
              in -> {
                byte[] b = new byte[8];
                return bytes(in.read(b, 0, 8), b);
              }));
      for (boolean direct : new boolean[] {false, true}) {
        String kind = direct ? "direct" : "heap";
        out.add(
            new EdgeCase(
                "read(ByteBuffer " + kind + ", capacity 0) " + where,
                at,
                in -> {
                  ByteBuffer b = buffer(direct, 0, 0);
                  return buffer(in.read(b), b);
                }));
        out.add(
            new EdgeCase(
                "read(ByteBuffer " + kind + ", position = limit = 4 of 8) " + where,
                at,
                in -> {
                  ByteBuffer b = buffer(direct, 8, 0);
                  return buffer(in.read(b), b);
                }));
        out.add(
            new EdgeCase(
                "read(ByteBuffer " + kind + ", 8 remaining) " + where,
                at,
                in -> {
                  ByteBuffer b = buffer(direct, 8, 8);
                  return buffer(in.read(b), b);
                }));
      }
      out.add(
          new EdgeCase(
              "readFully(byte[0]) " + where,
              at,
              in -> {
                in.readFully(new byte[0]);
                return "returned";
              }));
      out.add(
          new EdgeCase(
              "readFully(byte[8], 0, 0) " + where,
              at,
              in -> {
                byte[] b = new byte[8];
                in.readFully(b, 0, 0);
                return bytes(0, b);
              }));
      out.add(
          new EdgeCase(
              "readFully(byte[8]) " + where,
              at,
              in -> {
                byte[] b = new byte[8];
                in.readFully(b);
                return bytes(8, b);
              }));
      // Argument errors: the types InputStream names (IndexOutOfBoundsException), as stock.
      for (int[] offLen : new int[][] {{-1, 8}, {0, -1}, {4, 8}, {-1, 0}, {9, 0}}) {
        out.add(
            new EdgeCase(
                "read(byte[8], " + offLen[0] + ", " + offLen[1] + ") " + where,
                at,
                in -> {
                  byte[] b = new byte[8];
                  return bytes(in.read(b, offLen[0], offLen[1]), b);
                }));
      }
      out.add(
          new EdgeCase("read(null, 0, 8) " + where, at, in -> "returned " + in.read(null, 0, 8)));
      out.add(new EdgeCase("skip(0) " + where, at, in -> "returned " + in.skip(0)));
      out.add(new EdgeCase("skip(8) " + where, at, in -> "returned " + in.skip(8)));
      out.add(new EdgeCase("available() " + where, at, in -> "returned " + in.available()));
    }
    // Positional reads (the stream stays at 0): start, middle, last byte, EOF, past EOF.
    for (long at :
        new TreeSet<>(
            List.of(
                0L,
                length / 2L,
                Math.max(0L, length - 1L),
                (long) length,
                length + 1L,
                length + 4096L))) {
      out.add(
          new EdgeCase(
              "read(" + at + ", byte[0], 0, 0)",
              0,
              in -> bytes(in.read(at, new byte[0], 0, 0), null)));
      out.add(
          new EdgeCase(
              "read(" + at + ", byte[8], 0, 0)",
              0,
              in -> {
                byte[] b = new byte[8];
                return bytes(in.read(at, b, 0, 0), b);
              }));
      out.add(
          new EdgeCase(
              "read(" + at + ", byte[8], 0, 8)",
              0,
              in -> {
                byte[] b = new byte[8];
                return bytes(in.read(at, b, 0, 8), b);
              }));
      // Argument errors: the types PositionedReadable names, as stock.
      for (int[] offLen : new int[][] {{-1, 8}, {0, -1}, {4, 8}, {-1, 0}}) {
        out.add(
            new EdgeCase(
                "read(" + at + ", byte[8], " + offLen[0] + ", " + offLen[1] + ")",
                0,
                in -> {
                  byte[] b = new byte[8];
                  return bytes(in.read(at, b, offLen[0], offLen[1]), b);
                }));
        out.add(
            new EdgeCase(
                "readFully(" + at + ", byte[8], " + offLen[0] + ", " + offLen[1] + ")",
                0,
                in -> {
                  byte[] b = new byte[8];
                  in.readFully(at, b, offLen[0], offLen[1]);
                  return bytes(0, b);
                }));
      }
      out.add(
          new EdgeCase(
              "readFully(" + at + ", byte[0])",
              0,
              in -> {
                in.readFully(at, new byte[0]);
                return "returned";
              }));
      out.add(
          new EdgeCase(
              "readFully(" + at + ", byte[8], 0, 0)",
              0,
              in -> {
                byte[] b = new byte[8];
                in.readFully(at, b, 0, 0);
                return bytes(0, b);
              }));
      out.add(
          new EdgeCase(
              "readFully(" + at + ", byte[8])",
              0,
              in -> {
                byte[] b = new byte[8];
                in.readFully(at, b);
                return bytes(8, b);
              }));
      for (boolean direct : new boolean[] {false, true}) {
        String kind = direct ? "direct" : "heap";
        int[][] shapes = {{0, 0}, {8, 0}, {8, 8}}; // capacity, remaining
        for (int[] shape : shapes) {
          String buf =
              "ByteBuffer "
                  + kind
                  + ", "
                  + (shape[0] == 0 ? "capacity 0" : shape[1] + " remaining");
          out.add(
              new EdgeCase(
                  "read(" + at + ", " + buf + ")",
                  0,
                  in -> {
                    ByteBuffer b = buffer(direct, shape[0], shape[1]);
                    return buffer(in.read(at, b), b);
                  }));
          out.add(
              new EdgeCase(
                  "readFully(" + at + ", " + buf + ")",
                  0,
                  in -> {
                    ByteBuffer b = buffer(direct, shape[0], shape[1]);
                    in.readFully(at, b);
                    return buffer(0, b);
                  }));
        }
        out.add(
            new EdgeCase(
                "readVectored([" + at + ", +8), " + kind + ")",
                0,
                in -> {
                  FileRange range = FileRange.createFileRange(at, 8);
                  in.readVectored(
                      List.of(range), direct ? ByteBuffer::allocateDirect : ByteBuffer::allocate);
                  ByteBuffer b = range.getData().get(30, TimeUnit.SECONDS);
                  return buffer(b.remaining(), b);
                }));
      }
    }
    out.add(
        new EdgeCase(
            "read(-1, byte[8], 0, 8)",
            0,
            in -> {
              byte[] b = new byte[8];
              return bytes(in.read(-1, b, 0, 8), b);
            }));
    return out;
  }

  /** A buffer of {@code capacity} with {@code remaining} bytes of room, positioned at 4 if any. */
  private static ByteBuffer buffer(boolean direct, int capacity, int remaining) {
    ByteBuffer b = direct ? ByteBuffer.allocateDirect(capacity) : ByteBuffer.allocate(capacity);
    if (capacity > 0 && remaining == 0) {
      b.position(4).limit(4);
    }
    return b;
  }

  private static String bytes(int returned, byte[] b) {
    return "returned " + returned + (b == null ? "" : ", bytes " + Arrays.toString(b));
  }

  private static String buffer(int returned, ByteBuffer b) {
    ByteBuffer all = b.duplicate();
    all.clear();
    byte[] content = new byte[all.remaining()];
    all.get(content);
    return String.format(
        "returned %d, buffer position %d limit %d, bytes %s",
        returned, b.position(), b.limit(), Arrays.toString(content));
  }

  // ---------------------------------------------------------------- helpers

  /** Offsets on, just before and just after every chunk and block boundary, plus random ones. */
  private static long[] offsets(int length, Random random) {
    List<Long> result = new ArrayList<>();
    for (long boundary : boundaries(length)) {
      for (long delta = -2; delta <= 2; delta++) {
        long pos = boundary + delta;
        if (pos >= 0 && pos <= length) {
          result.add(pos);
        }
      }
    }
    for (int i = 0; i < 40 && length > 0; i++) {
      result.add((long) random.nextInt(length));
    }
    return result.stream().mapToLong(Long::longValue).toArray();
  }

  /** Chunk boundaries near block boundaries, block boundaries, and the end of the file. */
  private static List<Long> boundaries(int length) {
    List<Long> result = new ArrayList<>();
    result.add(0L);
    result.add((long) CHUNK);
    for (long block = BLOCK_SIZE; block < length + (long) BLOCK_SIZE; block += BLOCK_SIZE) {
      result.add(block - CHUNK);
      if (block <= length) {
        result.add(block);
        result.add(block + CHUNK);
      }
    }
    result.add((long) length);
    result.removeIf(p -> p > length);
    return result;
  }

  /** Mostly small (HBase's 4-64 KiB blocks), sometimes a block and more. */
  private static int randomLength(Random random) {
    switch (random.nextInt(4)) {
      case 0:
        return 1 + random.nextInt(CHUNK);
      case 1:
        return 4096;
      case 2:
        return 1 + random.nextInt(8 * CHUNK);
      default:
        return 1 + random.nextInt(BLOCK_SIZE + 3 * CHUNK);
    }
  }

  private Random random(ReadPath path, int test) {
    return new Random(SEED * 31 + path.ordinal() * 1009L + test);
  }

  private Path largestPath() {
    Path last = null;
    for (Path p : files.keySet()) {
      last = p;
    }
    return last;
  }

  private byte[] largest() {
    return files.get(largestPath());
  }

  static byte[] slice(byte[] data, long pos, int len) {
    byte[] out = new byte[len];
    System.arraycopy(data, (int) pos, out, 0, len);
    return out;
  }

  private static String describe(ReadPath path, Path file) {
    return path + " " + file + " seed=" + SEED;
  }

  private static String describe(ReadPath path, Path file, long pos) {
    return describe(path, file) + " pos=" + pos;
  }

  /** Files written by this class, for subclasses' extra checks. */
  protected Map<Path, byte[]> files() {
    return files;
  }
}
