package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The block-file mapping zero-copy reads lend slices of. It is charged to a budget and given back
 * once; a truncated block file is refused with an {@code EOFException} rather than lent; a fault on
 * a slice lent before the truncation is a catchable {@code InternalError} in the reading thread,
 * not a crash; and a slice still held after the replica closed reads zeros.
 */
class BlockFileMappingTest {
  private static final int LENGTH = 5 * 4096 + 100;

  private Path dir;
  private byte[] data;

  @BeforeEach
  void setUp() throws IOException {
    assumeTrue(ChecksumMappings.isAvailable(), () -> "" + ChecksumMappings.unavailabilityCause());
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    dir = Files.createTempDirectory(tmp, "bfm");
    data = new byte[LENGTH];
    new Random(16).nextBytes(data);
    data[0] = 1; // never zero: a released slice is told apart by reading zeros
  }

  private ReplicaFiles replica() throws IOException {
    Path d = dir.resolve("blk");
    Path m = dir.resolve("blk.meta");
    Files.write(d, data);
    // A NULL-checksum meta file (header only): this test is about the block file.
    ByteBuffer meta = ByteBuffer.allocate(7);
    meta.putShort((short) 1).put((byte) MetaHeader.TYPE_NULL).putInt(512);
    Files.write(m, meta.array());
    return ReplicaFiles.open(FileChannel.open(d), FileChannel.open(m), "BP-1:blk_16_1");
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Test
  void slicesAreReadOnlyViewsOfTheRangeAndShareOneChargedMapping() throws IOException {
    MappingBudget budget = MappingBudget.of(4, 1L << 30);
    try (ReplicaFiles files = replica()) {
      ByteBuffer a = files.mapData(100, 5000, budget);
      ByteBuffer b = files.mapData(LENGTH - 7, 7, budget);
      assertNotNull(a);
      assertTrue(a.isReadOnly() && a.isDirect());
      assertEquals(0, a.position());
      assertEquals(5000, a.remaining());
      assertArrayEquals(Arrays.copyOfRange(data, 100, 5100), bytes(a));
      assertArrayEquals(Arrays.copyOfRange(data, LENGTH - 7, LENGTH), bytes(b));
      assertEquals(1, budget.mappings(), "one mapping per replica, however many slices");
      assertEquals(LENGTH, budget.bytes());
    }
    assertEquals(0, budget.mappings(), "closing the replica gives the mapping back");
    assertEquals(0, budget.bytes());
  }

  @Test
  void aFullBudgetLendsNothingAndCountsTheRefusal() throws IOException {
    MappingBudget budget = MappingBudget.of(1, LENGTH);
    try (ReplicaFiles first = replica();
        ReplicaFiles second = replica()) {
      assertNotNull(first.mapData(0, 10, budget));
      assertNull(second.mapData(0, 10, budget));
      assertEquals(1, budget.refusals());
      assertFalse(second.isDataMapped());
    }
    MappingBudget tooFewBytes = MappingBudget.of(8, LENGTH - 1);
    try (ReplicaFiles files = replica()) {
      assertNull(files.mapData(0, 10, tooFewBytes));
      assertEquals(1, tooFewBytes.refusals());
    }
  }

  @Test
  void aTruncatedBlockFileIsRefusedAndALentSliceFaultsCatchably() throws IOException {
    MappingBudget budget = MappingBudget.of(4, 1L << 30);
    try (ReplicaFiles files = replica()) {
      ByteBuffer lent = files.mapData(0, LENGTH, budget);
      assertEquals(data[LENGTH - 1], lent.get(LENGTH - 1));
      try (RandomAccessFile raf = new RandomAccessFile(dir.resolve("blk").toFile(), "rw")) {
        raf.setLength(4096);
      }
      EOFException refused =
          assertThrows(EOFException.class, () -> files.mapData(4096, 4096, budget));
      assertTrue(refused.getMessage().contains("truncated to 4096"), refused.getMessage());
      assertEquals(data[10], files.mapData(0, 4096, budget).get(10), "the rest is still lent");
      // The caller's own read of a page the file lost: the JVM turns the SIGBUS into an
      // InternalError in the reading thread (from compiled code it arrives at the thread's next
      // safepoint, so a little after the read), and the process lives on.
      Throwable fault = faultOfReading(lent, 2 * 4096);
      assertTrue(fault instanceof InternalError, "" + fault);
      assertTrue(String.valueOf(fault.getMessage()).contains("unsafe memory access"), "" + fault);
    }
  }

  /** Reads {@code b.get(index)} on a new thread; returns what the thread threw (null: nothing). */
  private static Throwable faultOfReading(ByteBuffer b, int index) {
    Throwable[] outcome = new Throwable[1];
    long[] sink = new long[1];
    Thread reader =
        new Thread(
            () -> {
              try {
                long sum = b.get(index);
                for (int i = 0; i < 1_000_000; i++) { // safepoint polls: the error is delivered
                  sum += i;
                }
                sink[0] = sum;
              } catch (Throwable t) {
                outcome[0] = t;
              }
            });
    reader.start();
    try {
      reader.join(60_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    assertFalse(reader.isAlive(), "the reading thread did not finish");
    return outcome[0];
  }

  @Test
  void aSliceHeldPastTheReplicasCloseReadsZerosInsteadOfFaulting() throws IOException {
    MappingBudget budget = MappingBudget.of(4, 1L << 30);
    ReplicaFiles files = replica();
    ByteBuffer kept = files.mapData(0, LENGTH, budget);
    assertEquals(data[0], kept.get(0));
    files.close();
    assertArrayEquals(new byte[LENGTH], bytes(kept));
    Files.delete(dir.resolve("blk"));
    assertNull(files.mapData(0, 10, budget), "a closed replica lends nothing");
    assertEquals(0, budget.mappings());
  }
}
