package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * What a reader can reach is never closed or unmapped under it. An interrupt of one reader does not
 * close the channel every lease of the replica shares, and a closed replica's checksum mapping
 * reads as zeros (no crash) while its meta file is no longer mapped.
 */
class ReplicaFilesSafetyTest {
  private static final int BPC = 512;

  private static ReplicaFiles replica(Path dir, byte[] data) throws IOException {
    return replica(dir, data, true);
  }

  /** {@code uninterruptible} false opens the replica as a JVM without the flag would. */
  private static ReplicaFiles replica(Path dir, byte[] data, boolean uninterruptible)
      throws IOException {
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
    return ReplicaFiles.open(
        FileChannel.open(d), FileChannel.open(m), "BP-1:blk_9_1", true, uninterruptible);
  }

  private static Path dir() throws IOException {
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    return Files.createTempDirectory(tmp, "rfs");
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** Reads on a thread that is interrupted before it starts; returns what it read or threw. */
  private static Object readInterrupted(LocalBlockReader reader, ReplicaFiles f, int len)
      throws InterruptedException {
    AtomicReference<Object> outcome = new AtomicReference<>();
    Thread t =
        new Thread(
            () -> {
              Thread.currentThread().interrupt();
              byte[] buf = new byte[len];
              try {
                // Past the scratch size: the caller's array is read straight from the channel.
                int n = reader.read(f, 0, ByteBuffer.wrap(buf), true, "/f", new ReadContext(4096));
                outcome.set(Arrays.copyOf(buf, n));
              } catch (IOException e) {
                outcome.set(e);
              }
            });
    t.start();
    t.join(10_000);
    return outcome.get();
  }

  @Test
  void anInterruptedReaderNeitherFailsNorClosesTheChannelOtherLeasesShare() throws Exception {
    assertTrue(
        UninterruptibleChannels.isAvailable(),
        "the test JVM runs with --add-opens java.base/sun.nio.ch: "
            + UninterruptibleChannels.unavailabilityCause());
    byte[] data = random(64 * 1024, 1);
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f = replica(dir(), data)) {
      Object outcome = readInterrupted(reader, f, 16 * 1024);
      assertNotNull(outcome);
      assertTrue(outcome instanceof byte[], "the interrupted read completes: " + outcome);
      assertArrayEquals(Arrays.copyOf(data, 16 * 1024), (byte[]) outcome);
      assertTrue(f.isOpen(), "the shared channel is still open");
      byte[] buf = new byte[1000];
      assertEquals(
          1000,
          reader.read(f, 5000, ByteBuffer.wrap(buf, 0, 1000), true, "/f", new ReadContext(4096)));
      assertArrayEquals(Arrays.copyOfRange(data, 5000, 6000), buf);
    }
  }

  /**
   * Where the JVM keeps channels interruptible (no flag), the interrupt closes the shared channel:
   * the interrupted read fails with the interrupt, and the replica says it is no longer open, so
   * the cache replaces it and other readers lease again (tested in ScrFileSystemTest).
   */
  @Test
  void withoutTheFlagAnInterruptClosesTheChannelAndTheReplicaSaysSo() throws Exception {
    byte[] data = random(64 * 1024, 2);
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f = replica(dir(), data, false)) {
      Object outcome = readInterrupted(reader, f, 16 * 1024);
      assertTrue(outcome instanceof ClosedByInterruptException, "outcome: " + outcome);
      assertFalse(f.isOpen());
      assertThrows(
          ClosedChannelException.class,
          () ->
              reader.read(
                  f, 0, ByteBuffer.wrap(new byte[10], 0, 10), true, "/f", new ReadContext(4096)));
    }
  }

  @Test
  void aClosedReplicasChecksumMappingReadsAsZerosAndItsMetaFileIsNoLongerMapped() throws Exception {
    if (!ChecksumMappings.isAvailable()) {
      throw new org.opentest4j.TestAbortedException(
          "mapping unavailable: " + ChecksumMappings.unavailabilityCause());
    }
    byte[] data = random(1100 * BPC, 3); // meta file over HEAP_SUMS_MAX_BYTES: mapped
    Path dir = dir();
    ReplicaFiles f = replica(dir, data);
    MappedByteBuffer sums = f.mappedSums();
    assertNotNull(sums, "the meta file is mapped");
    String meta = dir.resolve("blk.meta").toString();
    assertTrue(mapped(meta), "mapped while open");
    int first = sums.getInt(7);
    assertTrue(first != 0 || sums.getInt(11) != 0, "real checksums while open");
    f.close();
    assertFalse(mapped(meta), "the meta file is no longer mapped once its replica closed");
    // A lease used after its close could still reach the buffer: it reads zeros, never faults.
    // (Before, the range was unmapped at close and this read crashed the JVM with SIGSEGV.)
    assertEquals(0, sums.getInt(7));
    assertEquals(0, sums.getInt(sums.capacity() - 4));
  }

  private static boolean mapped(String file) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
      if (line.endsWith(file) || line.endsWith(file + " (deleted)")) {
        return true;
      }
    }
    return false;
  }
}
