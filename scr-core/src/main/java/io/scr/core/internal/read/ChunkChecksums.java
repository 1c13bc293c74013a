package io.scr.core.internal.read;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.Checksum;
import org.apache.hadoop.fs.ChecksumException;

/**
 * Checksum verification for {@link LocalBlockReader}: finds the stored checksums of the chunks a
 * read covers (in memory when {@link ReplicaFiles} holds them, else one {@code pread} of the meta
 * file into the thread's {@link ReadScratch}) and checks the bytes read against them, with one CRC
 * pass over a span of several chunks and chunk by chunk only to name a bad one.
 *
 * <p>Thread-safety: stateless; every call works in the caller's {@link ReadScratch}.
 */
final class ChunkChecksums {
  private ChunkChecksums() {}

  /**
   * Locates the checksums of the chunks covering [position, position + len): in the mapped meta
   * file when there is one (no I/O), else pread into the scratch's sums buffer. Returns the buffer
   * holding them; the first is at index {@code s.sumsBase}.
   */
  static ByteBuffer readSums(ReplicaFiles replica, long position, int len, ReadScratch s)
      throws IOException {
    MetaHeader header = replica.header();
    int bpc = header.bytesPerChecksum();
    long firstChunk = position / bpc;
    long lastChunk = (position + len - 1) / bpc;
    int bytes = (int) (lastChunk - firstChunk + 1) * header.checksumSize();
    long offset = header.checksumOffset(firstChunk);
    ByteBuffer mapped = replica.sumsInMemory();
    if (mapped != null) {
      if (offset + bytes > mapped.capacity()) {
        throw metaTooShort(replica, firstChunk, (int) Math.max(0, mapped.capacity() - offset));
      }
      s.sumsBase = (int) offset;
      return mapped;
    }
    ByteBuffer sums = s.sums();
    sums.clear().limit(bytes);
    int n = LocalBlockReader.readFully(replica.meta(), sums, offset, bytes);
    if (n < bytes) {
      throw metaTooShort(replica, firstChunk, n);
    }
    sums.flip();
    s.sumsBase = 0;
    return sums;
  }

  private static ChecksumException metaTooShort(ReplicaFiles replica, long firstChunk, int got) {
    MetaHeader header = replica.header();
    int bpc = header.bytesPerChecksum();
    return new ChecksumException(
        "meta file of "
            + replica.blockName()
            + " is too short: no checksum for the chunk at block offset "
            + (firstChunk * bpc + (long) got / header.checksumSize() * bpc),
        firstChunk * bpc);
  }

  /**
   * Verifies {@code len} bytes of {@code buf} starting at index {@code from}, which hold the
   * replica's bytes from block offset {@code position} (a chunk boundary). A span of several chunks
   * is checked with one CRC pass against the chunk checksums combined ({@link CrcCombiner}); only a
   * mismatch goes chunk by chunk, to name the bad chunk.
   */
  static void verifyChunks(
      ReplicaFiles replica,
      ByteBuffer buf,
      int from,
      long position,
      int len,
      ByteBuffer sums,
      ReadScratch s,
      String fileName)
      throws IOException {
    MetaHeader header = replica.header();
    int bpc = header.bytesPerChecksum();
    Checksum crc = header.type() == MetaHeader.TYPE_CRC32C ? s.crc32c : s.crc32;
    int chunks = (len + bpc - 1) / bpc;
    int base = s.sumsBase;
    if (chunks > 1) {
      CrcCombiner combiner = header.combiner();
      int expected = storedSum(replica, sums, base);
      for (int i = 1; i < chunks; i++) {
        int chunkLen = Math.min(bpc, len - i * bpc);
        int next = storedSum(replica, sums, base + i * 4);
        expected =
            chunkLen == bpc
                ? combiner.appendChunk(expected, next)
                : combiner.append(expected, next, chunkLen);
      }
      crc.reset();
      buf.limit(from + len).position(from);
      crc.update(buf);
      if ((int) crc.getValue() == expected) {
        return;
      }
    }
    for (int i = 0; i < chunks; i++) {
      int chunkStart = from + i * bpc;
      int chunkLen = Math.min(bpc, len - i * bpc);
      crc.reset();
      buf.limit(chunkStart + chunkLen).position(chunkStart);
      crc.update(buf);
      int expected = storedSum(replica, sums, base + i * 4);
      int actual = (int) crc.getValue();
      if (expected != actual) {
        if (replica.isClosed()) {
          // A lease read after its replica closed: the released mapping reads as zeros. Not
          // corruption, and nothing to report.
          throw new java.nio.channels.ClosedChannelException();
        }
        if (replica.dataMapping() != null && replica.data().size() < replica.length()) {
          // A mapped read of a block file truncated under it: the faulting copy left the bytes
          // this CRC saw (its InternalError may still be on its way). Not corruption; one fstat,
          // on this failure path only.
          throw new java.io.EOFException(
              "the block file of "
                  + replica.blockName()
                  + " was truncated under a mapped read (opened with "
                  + replica.length()
                  + " bytes, now "
                  + replica.data().size()
                  + "); not reporting a checksum error");
        }
        long badOffset = position + (long) i * bpc;
        throw new ChecksumException(
            "Checksum error: "
                + (fileName != null ? fileName : "file of block " + replica.blockName())
                + " in block "
                + replica.blockName()
                + " at block offset "
                + badOffset
                + " (chunk of "
                + chunkLen
                + " bytes): expected "
                + Integer.toHexString(expected)
                + " but got "
                + Integer.toHexString(actual)
                + " ("
                + header
                + ")",
            badOffset);
      }
    }
    if (chunks == 1) {
      return;
    }
    // Every chunk matches its checksum but the span does not match their combination: the
    // combination is wrong, which would be a bug here, not in the data.
    throw new IllegalStateException(
        "combined checksums of "
            + chunks
            + " chunks at block offset "
            + position
            + " of "
            + replica.blockName()
            + " disagree with the chunks ("
            + header
            + ")");
  }

  /** The stored checksum at index {@code at} of {@code sums}. */
  private static int storedSum(ReplicaFiles replica, ByteBuffer sums, int at) throws IOException {
    try {
      return sums.getInt(at);
    } catch (InternalError e) {
      // A mapped meta file cut shorter under us (block recovery): the page is gone (SIGBUS).
      throw new IOException(
          "meta file of " + replica.blockName() + " changed size under a read", e);
    }
  }
}
