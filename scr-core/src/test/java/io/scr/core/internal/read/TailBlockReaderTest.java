package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads of a replica being written from a stock DataNode (no snapshot): the files here are written
 * in the order a DataNode writes them (a packet's bytes to the block file, then the last chunk's
 * checksum rewritten in place in the meta file), and reads are taken between the two writes.
 */
class TailBlockReaderTest {
  private static final int BPC = 512;

  @TempDir Path dir;
  private RbwFiles rbw;
  private ReplicaFiles replica;
  private final TailBlockReader reader = new TailBlockReader();
  private final ReadContext scratch = new ReadContext(64 * 1024);
  private final byte[] written = new byte[8 * BPC];

  @BeforeEach
  void open() throws IOException {
    new Random(27).nextBytes(written);
    rbw = new RbwFiles(dir);
    replica =
        ReplicaFiles.openGrowing(
            FileChannel.open(rbw.data, StandardOpenOption.READ),
            FileChannel.open(rbw.meta, StandardOpenOption.READ),
            "BP-1:blk_9_1");
  }

  @AfterEach
  void close() throws IOException {
    replica.close();
    rbw.close();
  }

  private byte[] read(long position, int len, long visibleLength) throws IOException {
    ByteBuffer dst = ByteBuffer.allocate(len);
    int n = reader.read(replica, position, dst, visibleLength, null, true, scratch);
    return n < 0 ? null : Arrays.copyOf(dst.array(), n);
  }

  private byte[] written(long from, long to) {
    return Arrays.copyOfRange(written, (int) from, (int) to);
  }

  private TailNotReadyException.Reason refusal(long position, int len, long visibleLength) {
    return assertThrows(TailNotReadyException.class, () -> read(position, len, visibleLength))
        .reason();
  }

  @Test
  void thePartialLastChunkIsServedWhenTheMetaFilesLastChecksumCoversIt() throws IOException {
    rbw.writePacket(written, 0, 3 * BPC + 200);
    long visible = 3 * BPC + 200;
    assertArrayEquals(written(0, visible), read(0, 4 * BPC, visible));
    assertArrayEquals(written(3 * BPC + 1, visible), read(3 * BPC + 1, BPC, visible));
    assertEquals(null, read(visible, 10, visible), "nothing at the visible length");
  }

  @Test
  void neverAByteAtOrPastTheVisibleLength() throws IOException {
    rbw.writePacket(written, 0, 3 * BPC + 200);
    // Acknowledged up to 100 bytes into the chunk: the chunk verifies as a whole, 100 are served.
    long visible = 3 * BPC + 100;
    assertArrayEquals(written(3 * BPC, visible), read(3 * BPC, BPC, visible));
    assertArrayEquals(written(0, visible), read(0, 8 * BPC, visible));
    assertEquals(null, read(visible, 10, visible));
  }

  @Test
  void betweenAPacketsBytesAndItsChecksumTheAcknowledgedBytesAreServed() throws IOException {
    rbw.writePacket(written, 0, 3 * BPC + 200);
    rbw.writeDataOnly(written, 3 * BPC + 200, 3 * BPC + 260);
    // The meta file's checksum is still for the first 200 bytes of the chunk, the visible length.
    long visible = 3 * BPC + 200;
    assertArrayEquals(written(3 * BPC + 50, visible), read(3 * BPC + 50, BPC, visible));
    rbw.writeChecksum(3 * BPC + 260);
    assertArrayEquals(written(3 * BPC + 50, visible), read(3 * BPC + 50, BPC, visible));
  }

  @Test
  void aChecksumForNeitherLengthServesNothingOfThePartialChunk() throws IOException {
    rbw.writePacket(written, 0, 3 * BPC + 200);
    rbw.writePacket(written, 3 * BPC + 200, 3 * BPC + 260);
    rbw.writeDataOnly(written, 3 * BPC + 260, 3 * BPC + 300);
    // Visible 200 bytes into the chunk, 300 on disk, the checksum for 260: not verifiable now.
    long visible = 3 * BPC + 200;
    assertEquals(TailNotReadyException.Reason.PARTIAL_CHUNK, refusal(3 * BPC, BPC, visible));
    // A read that starts below the chunk gets the whole chunks only.
    assertArrayEquals(written(BPC, 3 * BPC), read(BPC, 4 * BPC, visible));
    rbw.writeChecksum(3 * BPC + 300);
    assertArrayEquals(written(3 * BPC, visible), read(3 * BPC, BPC, visible));
  }

  @Test
  void acknowledgedButNotOnDiskIsRefusedUntilWritten() throws IOException {
    rbw.writePacket(written, 0, 2 * BPC);
    long visible = 2 * BPC + 40; // acknowledged before the DataNode wrote it
    assertEquals(TailNotReadyException.Reason.NOT_ON_DISK, refusal(2 * BPC, BPC, visible));
    rbw.writeDataOnly(written, 2 * BPC, 2 * BPC + 40);
    // On disk, but its checksum is not written yet (the meta file ends at the whole chunks).
    assertEquals(TailNotReadyException.Reason.PARTIAL_CHUNK, refusal(2 * BPC, BPC, visible));
    rbw.writeChecksum(2 * BPC + 40);
    assertArrayEquals(written(2 * BPC, visible), read(2 * BPC, BPC, visible));
  }

  @Test
  void aCorruptPartialChunkIsNeitherServedNorReportedCorrupt() throws IOException {
    rbw.writePacket(written, 0, 3 * BPC + 200);
    rbw.corrupt(3 * BPC + 17);
    long visible = 3 * BPC + 200;
    assertEquals(TailNotReadyException.Reason.PARTIAL_CHUNK, refusal(3 * BPC + 17, 10, visible));
    assertArrayEquals(written(0, 3 * BPC), read(0, 4 * BPC, visible), "the whole chunks only");
  }

  /** A replica being written, in the order a DataNode writes its two files. */
  private static final class RbwFiles implements AutoCloseable {
    final Path data;
    final Path meta;
    private final FileChannel dataOut;
    private final FileChannel metaOut;

    RbwFiles(Path dir) throws IOException {
      data = dir.resolve("blk_9");
      meta = dir.resolve("blk_9_1.meta");
      dataOut =
          FileChannel.open(
              data,
              StandardOpenOption.CREATE_NEW,
              StandardOpenOption.READ,
              StandardOpenOption.WRITE);
      metaOut = FileChannel.open(meta, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
      ByteBuffer header = ByteBuffer.allocate(MetaHeader.HEADER_BYTES);
      header.putShort((short) 1).put((byte) MetaHeader.TYPE_CRC32C).putInt(BPC).flip();
      metaOut.write(header, 0);
    }

    /** A packet's bytes {@code [from, to)} of {@code src} and then their checksums. */
    void writePacket(byte[] src, int from, int to) throws IOException {
      writeDataOnly(src, from, to);
      writeChecksum(to);
    }

    void writeDataOnly(byte[] src, int from, int to) throws IOException {
      dataOut.write(ByteBuffer.wrap(src, from, to - from), from);
    }

    /** The checksums of every chunk up to {@code length}, the last one rewritten in place. */
    void writeChecksum(int length) throws IOException {
      byte[] bytes = Files.readAllBytes(data);
      for (int chunk = 0; chunk * BPC < length; chunk++) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, chunk * BPC, Math.min(BPC, length - chunk * BPC));
        ByteBuffer sum = ByteBuffer.allocate(4).putInt((int) crc.getValue());
        sum.flip();
        metaOut.write(sum, MetaHeader.HEADER_BYTES + 4L * chunk);
      }
    }

    void corrupt(long offset) throws IOException {
      ByteBuffer b = ByteBuffer.allocate(1);
      dataOut.read(b, offset);
      b.flip();
      b.put(0, (byte) (b.get(0) ^ 0x5a));
      dataOut.write(b, offset);
    }

    @Override
    public void close() throws IOException {
      dataOut.close();
      metaOut.close();
    }
  }
}
