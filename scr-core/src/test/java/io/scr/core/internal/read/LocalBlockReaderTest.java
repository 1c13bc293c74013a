package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import org.apache.hadoop.fs.ChecksumException;
import org.junit.jupiter.api.Test;

/** Meta header parsing and checksum verification on files written here, stock layout. */
class LocalBlockReaderTest {
  private static final int BPC = 512;

  private static Path dir() throws IOException {
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    return Files.createTempDirectory(tmp, "lbr");
  }

  private static ReplicaFiles write(Path dir, byte[] data, int type) throws IOException {
    return write(dir, data, type, true);
  }

  private static ReplicaFiles write(Path dir, byte[] data, int type, boolean map)
      throws IOException {
    Path d = dir.resolve("blk");
    Path m = dir.resolve("blk.meta");
    Files.write(d, data);
    ByteBuffer meta = ByteBuffer.allocate(7 + ((data.length + BPC - 1) / BPC) * 4);
    meta.putShort((short) 1).put((byte) type).putInt(BPC);
    for (int off = 0; off < data.length; off += BPC) {
      Checksum c = type == MetaHeader.TYPE_CRC32C ? new CRC32C() : new CRC32();
      c.update(data, off, Math.min(BPC, data.length - off));
      meta.putInt((int) c.getValue());
    }
    Files.write(m, meta.array());
    return ReplicaFiles.open(
        FileChannel.open(d, StandardOpenOption.READ),
        FileChannel.open(m, StandardOpenOption.READ),
        "BP-1:blk_7_1",
        map);
  }

  @Test
  void headerIsParsedAndValidated() throws Exception {
    MetaHeader h = MetaHeader.parse(ByteBuffer.wrap(new byte[] {0, 1, 2, 0, 0, 2, 0}));
    assertEquals(MetaHeader.TYPE_CRC32C, h.type());
    assertEquals(512, h.bytesPerChecksum());
    assertEquals(7 + 3 * 4, h.checksumOffset(3));
    assertThrows(
        CorruptMetaException.class,
        () -> MetaHeader.parse(ByteBuffer.wrap(new byte[] {0, 2, 2, 0, 0, 2, 0})));
    assertThrows(
        CorruptMetaException.class,
        () -> MetaHeader.parse(ByteBuffer.wrap(new byte[] {0, 1, 9, 0, 0, 2, 0})));
    assertThrows(
        CorruptMetaException.class,
        () -> MetaHeader.parse(ByteBuffer.wrap(new byte[] {0, 1, 2, 0, 0, 0, 0})));
  }

  @Test
  void randomReadsMatchIncludingThePartialLastChunkForBothCrcs() throws Exception {
    Random rnd = new Random(3);
    // Partial last chunk; meta file larger than ReplicaFiles.HEAP_SUMS_MAX_BYTES, so mapped.
    byte[] data = new byte[600_000 + 77];
    rnd.nextBytes(data);
    LocalBlockReader reader = new LocalBlockReader();
    for (int variant = 0; variant < 4; variant++) {
      int type = variant % 2 == 0 ? MetaHeader.TYPE_CRC32C : MetaHeader.TYPE_CRC32;
      boolean map = variant < 2;
      try (ReplicaFiles f = write(dir(), data, type, map)) {
        assertEquals(
            map && ChecksumMappings.isAvailable() ? 1 : 2,
            f.fdCount(),
            "a mapped meta file holds no fd");
        assertEquals(map && ChecksumMappings.isAvailable(), f.mappedSums() != null);
        assertTrue(f.isOpen());
        for (int i = 0; i < 300; i++) {
          int off = i % 5 == 0 ? data.length - 1 - rnd.nextInt(700) : rnd.nextInt(data.length);
          int len = 1 + rnd.nextInt(20_000);
          int want = Math.min(len, data.length - off);
          byte[] got = new byte[want];
          if (i % 3 == 0) {
            int done = 0;
            while (done < want) {
              int n =
                  reader.read(
                      f,
                      off + done,
                      ByteBuffer.wrap(got, done, want - done),
                      true,
                      "/f",
                      new ReadContext(4096));
              assertTrue(n > 0);
              done += n;
            }
          } else {
            ByteBuffer dst =
                rnd.nextBoolean() ? ByteBuffer.allocateDirect(want) : ByteBuffer.allocate(want);
            while (dst.hasRemaining()) {
              assertTrue(
                  reader.read(f, off + dst.position(), dst, true, "/f", new ReadContext(4096)) > 0);
            }
            dst.flip();
            dst.get(got);
          }
          assertArrayEquals(Arrays.copyOfRange(data, off, off + want), got, "off " + off);
        }
        assertEquals(
            -1,
            reader.read(
                f,
                data.length,
                ByteBuffer.wrap(new byte[4], 0, 4),
                true,
                "/f",
                new ReadContext(4096)));
        f.close();
        assertTrue(!f.isOpen());
        f.close(); // idempotent: unmaps once
      }
    }
  }

  @Test
  void manyReplicasMapTheirMetaFilesUpToAQuarterOfTheProcessMapLimit() throws Exception {
    int limit = ChecksumMappings.limit();
    assertTrue(limit >= 1024, "a quarter of vm.max_map_count, read whole: " + limit);
    if (!ChecksumMappings.isAvailable()) {
      return;
    }
    byte[] data = new byte[1024 * BPC]; // a meta file over ReplicaFiles.HEAP_SUMS_MAX_BYTES
    List<ReplicaFiles> open = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < 50; i++) {
        ReplicaFiles f = write(dir(), data, MetaHeader.TYPE_CRC32C, true);
        open.add(f);
        assertEquals(1, f.fdCount(), "replica " + i + " mapped its meta file");
      }
    } finally {
      for (ReplicaFiles f : open) {
        f.close();
      }
    }
  }

  @Test
  void mappedChecksumsAreReleasedOnCloseAndAShortMetaFileIsAChecksumError() throws Exception {
    byte[] data = new byte[5000];
    new Random(9).nextBytes(data);
    Path dir = dir();
    int liveBefore = ChecksumMappings.live();
    write(dir, data, MetaHeader.TYPE_CRC32C, true).close();
    assertEquals(liveBefore, ChecksumMappings.live(), "close unmapped the meta file");
    // Cut the meta file after the header and the first checksum: chunk 1 has no checksum.
    byte[] meta = Files.readAllBytes(dir.resolve("blk.meta"));
    Files.write(dir.resolve("blk.meta"), Arrays.copyOf(meta, 7 + 4));
    LocalBlockReader reader = new LocalBlockReader();
    for (boolean map : new boolean[] {true, false}) {
      try (ReplicaFiles f =
          ReplicaFiles.open(
              FileChannel.open(dir.resolve("blk")),
              FileChannel.open(dir.resolve("blk.meta")),
              "BP-1:blk_8_1",
              map)) {
        assertEquals(
            100,
            reader.read(
                f, 0, ByteBuffer.wrap(new byte[100], 0, 100), true, "/f", new ReadContext(4096)));
        ChecksumException e =
            assertThrows(
                ChecksumException.class,
                () ->
                    reader.read(
                        f,
                        600,
                        ByteBuffer.wrap(new byte[100], 0, 100),
                        true,
                        "/f",
                        new ReadContext(4096)));
        assertTrue(
            e.getMessage().contains("meta file of BP-1:blk_8_1 is too short"), e.getMessage());
        assertEquals(512, e.getPos());
      }
    }
    assertEquals(liveBefore, ChecksumMappings.live());
  }

  @Test
  void corruptedByteThrowsChecksumExceptionNamingFileBlockAndOffsetUnlessVerificationIsOff()
      throws Exception {
    byte[] data = new byte[10_000];
    new Random(5).nextBytes(data);
    Path dir = dir();
    write(dir, data, MetaHeader.TYPE_CRC32C).close();
    byte[] corrupt = data.clone();
    corrupt[5_000] ^= 1;
    Files.write(dir.resolve("blk"), corrupt);
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f =
        ReplicaFiles.open(
            FileChannel.open(dir.resolve("blk")),
            FileChannel.open(dir.resolve("blk.meta")),
            "BP-1:blk_7_1")) {
      ChecksumException e =
          assertThrows(
              ChecksumException.class,
              () ->
                  reader.read(
                      f,
                      4_900,
                      ByteBuffer.wrap(new byte[300], 0, 300),
                      true,
                      "/data/f",
                      new ReadContext(4096)));
      assertEquals(4_608, e.getPos());
      assertTrue(
          e.getMessage().contains("/data/f")
              && e.getMessage().contains("blk_7_1")
              && e.getMessage().contains("4608"),
          e.getMessage());
      ChecksumException direct =
          assertThrows(
              ChecksumException.class,
              () ->
                  reader.read(
                      f,
                      4_608,
                      ByteBuffer.allocateDirect(1024),
                      true,
                      null,
                      new ReadContext(4096)));
      assertTrue(direct.getMessage().contains("file of block BP-1:blk_7_1"), direct.getMessage());
      byte[] buf = new byte[300];
      assertEquals(
          300,
          reader.read(
              f, 4_900, ByteBuffer.wrap(buf, 0, 300), false, "/data/f", new ReadContext(4096)));
      assertArrayEquals(Arrays.copyOfRange(corrupt, 4_900, 5_200), buf);
      assertEquals(
          100,
          reader.read(
              f, 0, ByteBuffer.wrap(new byte[100], 0, 100), true, "/data/f", new ReadContext(4096)),
          "other chunks verify");
    }
  }
}
