package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.ChecksumException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Mapped reads against the {@code pread} reader on the same replica files: the same bytes for
 * random ranges into arrays, heap and direct buffers, with verification on and off; a corrupted
 * chunk is the same {@link ChecksumException}; a hot replica is read from its mapping without its
 * data channel (no {@code pread}); a full budget is a counted {@code pread}.
 */
class MappedBlockReadTest {
  private static final int BPC = 512;

  @BeforeAll
  static void mappingIsAvailable() {
    assumeTrue(ChecksumMappings.isAvailable(), "needs scr-shm's native calls");
  }

  private static ReplicaFiles write(byte[] data) throws IOException {
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    Path dir = Files.createTempDirectory(tmp, "mapped");
    Path d = dir.resolve("blk");
    Path m = dir.resolve("blk.meta");
    Files.write(d, data);
    ByteBuffer meta = ByteBuffer.allocate(7 + ((data.length + BPC - 1) / BPC) * 4);
    meta.putShort((short) 1).put((byte) MetaHeader.TYPE_CRC32C).putInt(BPC);
    for (int off = 0; off < data.length; off += BPC) {
      CRC32C c = new CRC32C();
      c.update(data, off, Math.min(BPC, data.length - off));
      meta.putInt((int) c.getValue());
    }
    Files.write(m, meta.array());
    ReplicaFiles f =
        ReplicaFiles.open(
            FileChannel.open(d, StandardOpenOption.READ),
            FileChannel.open(m, StandardOpenOption.READ),
            "BP-1:blk_9_1");
    BLOCK_FILES.put(f, d);
    return f;
  }

  /** The block file {@link #write} wrote for each replica it opened. */
  private static final java.util.Map<ReplicaFiles, Path> BLOCK_FILES =
      java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());

  private static Path blockFile(ReplicaFiles f) {
    return BLOCK_FILES.get(f);
  }

  /** Cuts the block file of {@code f} to {@code bytes} under its open replica (block recovery). */
  private static void truncateBlockFile(ReplicaFiles f, long bytes) throws IOException {
    try (FileChannel w = FileChannel.open(blockFile(f), StandardOpenOption.WRITE)) {
      w.truncate(bytes);
    }
  }

  /** One read of {@code len} bytes at {@code off} through {@code reader}, whichever way. */
  private static byte[] read(
      LocalBlockReader reader, ReplicaFiles f, int off, int len, boolean verify, int way)
      throws IOException {
    byte[] got = new byte[len];
    if (way == 0) {
      int done = 0;
      while (done < len) {
        int n =
            reader.read(
                f,
                off + done,
                ByteBuffer.wrap(got, done, len - done),
                verify,
                "/f",
                new ReadContext(4096));
        assertTrue(n > 0);
        done += n;
      }
      return got;
    }
    ByteBuffer dst = way == 1 ? ByteBuffer.allocate(len) : ByteBuffer.allocateDirect(len);
    while (dst.hasRemaining()) {
      assertTrue(
          reader.read(f, off + dst.position(), dst, verify, "/f", new ReadContext(4096)) > 0);
    }
    dst.flip();
    dst.get(got);
    return got;
  }

  @Test
  void randomRangesMatchThePreadReaderWithVerificationOnAndOff() throws Exception {
    Random rnd = new Random(16);
    byte[] data = new byte[300_000 + 77]; // a partial last chunk
    rnd.nextBytes(data);
    MappedReads policy = MappedReads.of(MappingBudget.of(4, 1 << 30), 1);
    LocalBlockReader mapped = new LocalBlockReader(policy);
    LocalBlockReader pread = new LocalBlockReader();
    try (ReplicaFiles f = write(data)) {
      for (int i = 0; i < 600; i++) {
        boolean verify = i % 2 == 0;
        int off = i % 7 == 0 ? data.length - 1 - rnd.nextInt(900) : rnd.nextInt(data.length);
        int len = Math.min(1 + rnd.nextInt(i % 5 == 0 ? 200_000 : 9000), data.length - off);
        int way = rnd.nextInt(3);
        byte[] expect = Arrays.copyOfRange(data, off, off + len);
        String what = "read " + i + " at " + off + " +" + len + " verify " + verify + " way " + way;
        assertArrayEquals(expect, read(mapped, f, off, len, verify, way), what);
        assertArrayEquals(expect, read(pread, f, off, len, verify, way), what);
      }
      assertTrue(f.isDataMapped(), "the first read mapped the block file");
      assertTrue(policy.reads() >= 600, "every read was served from the mapping: " + policy);
      assertEquals(0, policy.fallbacks());
      assertEquals(1, policy.budget().mappings());
      assertEquals(data.length, policy.budget().bytes());
      assertEquals(
          -1,
          mapped.read(
              f,
              data.length,
              ByteBuffer.wrap(new byte[4], 0, 4),
              true,
              "/f",
              new ReadContext(4096)));
    }
    assertEquals(0, policy.budget().mappings(), "closing the replica gave the mapping back");
  }

  @Test
  void aHotReplicaIsReadWithoutItsDataChannelThatIsWithoutAPread() throws Exception {
    byte[] data = new byte[100_000];
    new Random(4).nextBytes(data);
    MappedReads policy = MappedReads.of(MappingBudget.of(4, 1 << 30), 3);
    LocalBlockReader reader = new LocalBlockReader(policy);
    try (ReplicaFiles f = write(data)) {
      for (int i = 0; i < 2; i++) {
        // One call each (fits the scratch), so one read each for the hotness count.
        assertArrayEquals(Arrays.copyOfRange(data, 700, 1700), read(reader, f, 700, 1000, true, 0));
        assertFalse(f.isDataMapped(), "not hot before its 3rd read");
      }
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4096), read(reader, f, 0, 4096, true, 2));
      assertTrue(f.isDataMapped(), "mapped on its 3rd read");
      // Every pread from now on would throw ClosedChannelException.
      f.data().close();
      assertThrows(
          java.nio.channels.ClosedChannelException.class,
          () -> read(new LocalBlockReader(), f, 0, 10, true, 0));
      for (int way = 0; way < 3; way++) {
        for (boolean verify : new boolean[] {true, false}) {
          assertArrayEquals(
              Arrays.copyOfRange(data, 333, 70_333), read(reader, f, 333, 70_000, verify, way));
        }
      }
    }
  }

  @Test
  void aCorruptedChunkIsTheSameChecksumExceptionAsFromAPreadAndSkippedWithoutVerification()
      throws Exception {
    byte[] data = new byte[64 * 1024];
    new Random(5).nextBytes(data);
    MappedReads policy = MappedReads.of(MappingBudget.of(4, 1 << 30), 1);
    LocalBlockReader mapped = new LocalBlockReader(policy);
    LocalBlockReader pread = new LocalBlockReader();
    try (ReplicaFiles f = write(data)) {
      read(mapped, f, 0, 10, true, 0);
      assertTrue(f.isDataMapped());
      int bad = 5 * BPC + 17;
      try (FileChannel w = FileChannel.open(blockFile(f), StandardOpenOption.WRITE)) {
        w.write(ByteBuffer.wrap(new byte[] {(byte) ~data[bad]}), bad);
      }
      long before = policy.reads();
      for (int way = 0; way < 3; way++) {
        for (int[] range : new int[][] {{5 * BPC, BPC}, {bad - 3, 9}, {0, 16 * BPC}}) {
          int w = way;
          ChecksumException fromMapping =
              assertThrows(
                  ChecksumException.class, () -> read(mapped, f, range[0], range[1], true, w));
          ChecksumException fromPread =
              assertThrows(
                  ChecksumException.class, () -> read(pread, f, range[0], range[1], true, w));
          assertEquals(5 * BPC, fromMapping.getPos());
          assertEquals(fromPread.getMessage(), fromMapping.getMessage());
        }
        byte[] unverified = read(mapped, f, bad - 3, 9, false, way);
        assertEquals((byte) ~data[bad], unverified[3], "without verification the bytes as stored");
        assertArrayEquals(read(pread, f, bad - 3, 9, false, way), unverified);
      }
      assertTrue(policy.reads() >= before + 12, "the failing reads came from the mapping");
    }
  }

  @Test
  void beyondTheBudgetAHotReplicaIsPreadCountedAndAskedAgainOnlyNowAndThen() throws Exception {
    byte[] a = new byte[40_000];
    byte[] b = new byte[50_000];
    new Random(6).nextBytes(a);
    new Random(7).nextBytes(b);
    MappedReads policy = MappedReads.of(MappingBudget.of(1, 1 << 30), 1);
    LocalBlockReader reader = new LocalBlockReader(policy);
    try (ReplicaFiles fa = write(a);
        ReplicaFiles fb = write(b)) {
      assertArrayEquals(Arrays.copyOfRange(a, 10, 4000), read(reader, fa, 10, 3990, true, 1));
      assertTrue(fa.isDataMapped());
      for (int i = 0; i < 10; i++) {
        assertArrayEquals(
            Arrays.copyOfRange(b, i, i + 999), read(reader, fb, i, 999, i % 2 == 0, 0));
      }
      assertFalse(fb.isDataMapped(), "the budget holds one mapping, fa's");
      assertEquals(10, policy.fallbacks(), "every read of the hot replica that was pread");
      assertEquals(1, policy.budget().refusals(), "refused once, not asked again on every read");
      assertEquals(1, policy.reads());
      fa.close();
      for (int i = 0; i < MappedReads.RETRY_INTERVAL; i++) {
        read(reader, fb, 0, 100, true, 2);
      }
      assertTrue(fb.isDataMapped(), "asked again after " + MappedReads.RETRY_INTERVAL + " reads");
      assertEquals(1, policy.budget().refusals(), "and the budget had room then");
      assertEquals(1, policy.budget().mappings());
    }
  }

  /**
   * The residual risk, pinned: a block file truncated under its mapping faults the copy; the JVM
   * survives, and the reading thread sees an exception (scr's {@code IOException} when the fault
   * surfaces in the read, an {@code EOFException} when the CRC over the bytes the aborted copy left
   * failed first, or the JVM's {@code InternalError} delivered later), never a checksum error (a
   * truncation is not corruption) and never the read's bytes as if nothing happened.
   */
  @Test
  void aBlockFileTruncatedUnderItsMappingFailsTheReadingThreadWithoutCrashingTheJvm()
      throws Exception {
    byte[] data = new byte[256 * 1024];
    new Random(9).nextBytes(data);
    MappedReads policy = MappedReads.of(MappingBudget.of(4, 1 << 30), 1);
    LocalBlockReader reader = new LocalBlockReader(policy);
    try (ReplicaFiles f = write(data)) {
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4096), read(reader, f, 0, 4096, true, 0));
      assertTrue(f.isDataMapped());
      truncateBlockFile(f, 4096);
      java.util.concurrent.atomic.AtomicReference<Throwable> seen =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicReference<byte[]> returned =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread t =
          new Thread(
              () -> {
                long spin = 0;
                try {
                  returned.set(read(reader, f, 128 * 1024, 8192, true, 2));
                  // Give an asynchronous InternalError safepoints to surface at, inside this try.
                  for (int i = 0; i < 50_000_000; i++) {
                    spin += i ^ (spin >>> 3);
                  }
                } catch (IOException | InternalError e) {
                  seen.set(e);
                }
                if (spin == 42) {
                  System.out.print(""); // keeps the loop
                }
              },
              "mapped-truncated");
      t.setUncaughtExceptionHandler((th, e) -> seen.compareAndSet(null, e));
      t.start();
      t.join(60_000);
      assertFalse(t.isAlive());
      Throwable e = seen.get();
      System.err.println("TRUNCATED-SAW " + e + " returned " + (returned.get() != null));
      if (e != null) e.printStackTrace();
      assertFalse(e instanceof ChecksumException, "a truncation is not corruption: " + e);
      assertTrue(
          e instanceof IOException || e instanceof InternalError,
          "the reading thread failed (it returned "
              + (returned.get() == null ? "nothing" : returned.get().length + " bytes")
              + "): "
              + e);
    }
  }

  /**
   * Where the fault of a truncated mapping surfaces is the JVM's choice, and code after an aborted
   * copy can fail with any runtime exception ("an unspecified exception", says {@code
   * MappedByteBuffer}; CI once saw an {@code ArrayIndexOutOfBoundsException} in the test above).
   * Such an exception from a read of a mapped replica whose block file shrank reaches the caller as
   * the fault's {@code IOException}, which the HDFS client answers from another replica; the same
   * exception while the block file is whole is a bug, and passes unchanged. A read-only destination
   * makes the runtime exception here, deterministically.
   */
  @Test
  void aRuntimeExceptionFromAReadOfATruncatedMappedReplicaIsTheFaultsIOException()
      throws Exception {
    byte[] data = new byte[64 * 1024];
    new Random(10).nextBytes(data);
    MappedReads policy = MappedReads.of(MappingBudget.of(4, 1 << 30), 1);
    LocalBlockReader reader = new LocalBlockReader(policy);
    try (ReplicaFiles f = write(data)) {
      assertArrayEquals(Arrays.copyOfRange(data, 0, 512), read(reader, f, 0, 512, true, 0));
      assertTrue(f.isDataMapped());
      ByteBuffer readOnly = ByteBuffer.allocateDirect(8192).asReadOnlyBuffer();
      assertThrows(
          java.nio.ReadOnlyBufferException.class,
          () -> reader.read(f, 8192, readOnly, true, "/f", new ReadContext(4096)),
          "the block file is whole: not a truncation");
      truncateBlockFile(f, 4096);
      for (boolean verify : new boolean[] {true, false}) {
        IOException e =
            assertThrows(
                IOException.class,
                () -> reader.read(f, 8192, readOnly, verify, "/f", new ReadContext(4096)));
        assertTrue(e.getMessage().contains("faulted under a mapped read"), e.getMessage());
        assertTrue(e.getCause() instanceof java.nio.ReadOnlyBufferException, e.toString());
      }
    }
  }

  @Test
  void withoutAPolicyNoBlockFileIsMapped() throws Exception {
    byte[] data = new byte[30_000];
    new Random(8).nextBytes(data);
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f = write(data)) {
      for (int i = 0; i < 50; i++) {
        assertArrayEquals(
            Arrays.copyOfRange(data, i * 100, i * 100 + 5000),
            read(reader, f, i * 100, 5000, i % 2 == 0, i % 3));
      }
      assertFalse(f.isDataMapped());
    }
  }
}
