package io.scr.core.internal.read;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.Checksum;
import org.apache.hadoop.fs.ChecksumException;

/**
 * The checksums of one meta-file checksum type and chunk size, and the verification of reads
 * against them, for {@link LocalBlockReader} and {@link TailBlockReader}: finds the stored
 * checksums of the chunks a read covers (in memory when {@link ReplicaFiles} holds them, else one
 * {@code pread} of the meta file into the thread's {@link ReadContext}) and checks the bytes read
 * against them, with one CRC pass over a span of several chunks and chunk by chunk only to name a
 * bad one. Each {@link ReplicaFiles} holds the instance of its meta header.
 *
 * <p><b>One CRC pass over many chunks.</b> The chunk CRCs are combined into the CRC of the chunks'
 * concatenation, so that a read covering many checksum chunks is verified with one {@code
 * java.util.zip} CRC pass over the whole span (the intrinsic's fast, interleaved path) plus a few
 * table lookups per chunk, instead of one short CRC call per 512-byte chunk. The arithmetic is
 * zlib's {@code crc32_combine}: for conditioned CRCs (initial value and final xor all ones,
 * reflected), {@code crc(A || B) = crc(A) · x^(8·|B|) mod P xor crc(B)}. Multiplying by the fixed
 * power for a full chunk is linear in the 32-bit value, so it is four lookups in a 1024-entry table
 * built once per (polynomial, chunk size).
 *
 * <p>Detection is that of the chunk checksums for every corruption confined to one chunk (the
 * combined difference is that chunk's error times a power of x, which is zero modulo P exactly when
 * the chunk's own CRC would miss it) and for every burst of up to 32 bits; only errors in several
 * chunks at once could cancel, with probability 2^-32 for random damage. A mismatch is then located
 * chunk by chunk, so errors name the same bad chunk as before.
 *
 * <p>Thread-safety: immutable; every call works in the caller's {@link ReadContext}.
 */
final class ChunkChecksums {
  /** Reflected CRC32C (Castagnoli) polynomial. */
  private static final int CRC32C_POLY = 0x82F63B78;

  /** Reflected CRC32 (zlib) polynomial. */
  private static final int CRC32_POLY = 0xEDB88320;

  private static final ChunkChecksums CRC32C_512 = new ChunkChecksums(MetaHeader.TYPE_CRC32C, 512);
  private static final ChunkChecksums CRC32_512 = new ChunkChecksums(MetaHeader.TYPE_CRC32, 512);

  /** Bytes of one stored checksum (CRC32 and CRC32C). */
  private static final int SUM_BYTES = 4;

  /**
   * The meta header's checksum type ({@link MetaHeader#TYPE_CRC32C} or {@link
   * MetaHeader#TYPE_CRC32}).
   */
  private final int type;

  private final int poly;
  private final int chunkBytes;

  /** x^(2^k) mod P for k = 0..31. */
  private final int[] powers = new int[32];

  /** Four 256-entry tables: multiplication by x^(8 · chunkBytes), one per byte of the operand. */
  private final int[] shiftTable = new int[1024];

  private ChunkChecksums(int type, int chunkBytes) {
    this.type = type;
    this.poly = type == MetaHeader.TYPE_CRC32C ? CRC32C_POLY : CRC32_POLY;
    this.chunkBytes = chunkBytes;
    int p = 1 << 30; // x^1 (bit 31 is x^0 in the reflected representation)
    for (int k = 0; k < 32; k++) {
      powers[k] = p;
      p = multModP(p, p);
    }
    int chunkPower = xPow8n(chunkBytes);
    for (int j = 0; j < 4; j++) {
      for (int b = 0; b < 256; b++) {
        shiftTable[j * 256 + b] = multModP(chunkPower, b << (8 * j));
      }
    }
  }

  /**
   * The checksums of type {@code type} ({@link MetaHeader#TYPE_CRC32C} or {@link
   * MetaHeader#TYPE_CRC32}) over {@code chunkBytes} per chunk: shared for 512-byte chunks (HDFS's
   * default), built anew (about 30 µs) for other sizes.
   */
  static ChunkChecksums of(int type, int chunkBytes) {
    if (type != MetaHeader.TYPE_CRC32C && type != MetaHeader.TYPE_CRC32) {
      throw new IllegalArgumentException("no CRC for checksum type " + type);
    }
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size " + chunkBytes);
    }
    if (chunkBytes == 512) {
      return type == MetaHeader.TYPE_CRC32C ? CRC32C_512 : CRC32_512;
    }
    return new ChunkChecksums(type, chunkBytes);
  }

  /** The chunk size: data bytes covered by one checksum. */
  int chunkBytes() {
    return chunkBytes;
  }

  /** The offset in the meta file of the checksum of chunk {@code chunk}. */
  private static long offsetOf(long chunk) {
    return MetaHeader.HEADER_BYTES + chunk * SUM_BYTES;
  }

  /** The thread's CRC engine of this type. */
  Checksum crc(ReadContext s) {
    return type == MetaHeader.TYPE_CRC32C ? s.crc32c : s.crc32;
  }

  /**
   * Locates the checksums of the chunks covering [position, position + len): in the mapped meta
   * file when there is one (no I/O), else pread into the scratch's sums buffer. Returns the buffer
   * holding them; the first is at index {@code s.sumsBase}.
   */
  ByteBuffer readSums(ReplicaFiles replica, long position, int len, ReadContext s)
      throws IOException {
    int bpc = chunkBytes;
    long firstChunk = position / bpc;
    long lastChunk = (position + len - 1) / bpc;
    int bytes = (int) (lastChunk - firstChunk + 1) * SUM_BYTES;
    long offset = offsetOf(firstChunk);
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

  private ChecksumException metaTooShort(ReplicaFiles replica, long firstChunk, int got) {
    int bpc = chunkBytes;
    return new ChecksumException(
        "meta file of "
            + replica.blockName()
            + " is too short: no checksum for the chunk at block offset "
            + (firstChunk * bpc + (long) got / SUM_BYTES * bpc),
        firstChunk * bpc);
  }

  /**
   * Verifies {@code len} bytes of {@code buf} starting at index {@code from}, which hold the
   * replica's bytes from block offset {@code position} (a chunk boundary). A span of several chunks
   * is checked with one CRC pass against the chunk checksums combined (see the class comment); only
   * a mismatch goes chunk by chunk, to name the bad chunk.
   */
  void verifyChunks(
      ReplicaFiles replica,
      ByteBuffer buf,
      int from,
      long position,
      int len,
      ByteBuffer sums,
      ReadContext s,
      String fileName)
      throws IOException {
    int bpc = chunkBytes;
    Checksum crc = crc(s);
    int chunks = (len + bpc - 1) / bpc;
    int base = s.sumsBase;
    if (chunks > 1) {
      int expected = storedSum(replica, sums, base);
      for (int i = 1; i < chunks; i++) {
        int chunkLen = Math.min(bpc, len - i * bpc);
        int next = storedSum(replica, sums, base + i * 4);
        expected = chunkLen == bpc ? appendChunk(expected, next) : append(expected, next, chunkLen);
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
                + this
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
            + this
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

  /** {@code crc(A || B)} from {@code crcA = crc(A)} and {@code crcB = crc(B)}, B a full chunk. */
  int appendChunk(int crcA, int crcB) {
    int v = crcA;
    return shiftTable[v & 0xff]
        ^ shiftTable[256 + ((v >>> 8) & 0xff)]
        ^ shiftTable[512 + ((v >>> 16) & 0xff)]
        ^ shiftTable[768 + (v >>> 24)]
        ^ crcB;
  }

  /** {@code crc(A || B)} from {@code crcA}, {@code crcB} and B's length in bytes (any length). */
  int append(int crcA, int crcB, long lengthB) {
    if (lengthB == chunkBytes) {
      return appendChunk(crcA, crcB);
    }
    if (lengthB == 0) {
      return crcA;
    }
    return multModP(xPow8n(lengthB), crcA) ^ crcB;
  }

  /** x^(8n) mod P. */
  private int xPow8n(long n) {
    int p = 1 << 31; // x^0
    int k = 3; // 8n = n · 2^3
    while (n != 0) {
      if ((n & 1) != 0) {
        p = multModP(powers[k & 31], p);
      }
      n >>>= 1;
      k++;
    }
    return p;
  }

  /** a · b mod P in the reflected representation. */
  private int multModP(int a, int b) {
    if (a == 0) {
      return 0;
    }
    int m = 1 << 31;
    int p = 0;
    while (true) {
      if ((a & m) != 0) {
        p ^= b;
        if ((a & (m - 1)) == 0) {
          return p;
        }
      }
      m >>>= 1;
      b = (b & 1) != 0 ? (b >>> 1) ^ poly : b >>> 1;
    }
  }

  @Override
  public String toString() {
    return (type == MetaHeader.TYPE_CRC32C ? "CRC32C" : "CRC32") + "/" + chunkBytes;
  }
}
