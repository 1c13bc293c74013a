package io.scr.core.internal.read;

/**
 * Combines per-chunk CRCs into the CRC of the chunks' concatenation, so that a read covering many
 * checksum chunks is verified with one {@code java.util.zip} CRC pass over the whole span (the
 * intrinsic's fast, interleaved path) plus a few table lookups per chunk, instead of one short CRC
 * call per 512-byte chunk.
 *
 * <p>The arithmetic is zlib's {@code crc32_combine}: for conditioned CRCs (initial value and final
 * xor all ones, reflected), {@code crc(A || B) = crc(A) · x^(8·|B|) mod P xor crc(B)}. Multiplying
 * by the fixed power for a full chunk is linear in the 32-bit value, so it is four lookups in a
 * 1024-entry table built once per (polynomial, chunk size).
 *
 * <p>Detection is that of the chunk checksums for every corruption confined to one chunk (the
 * combined difference is that chunk's error times a power of x, which is zero modulo P exactly when
 * the chunk's own CRC would miss it) and for every burst of up to 32 bits; only errors in several
 * chunks at once could cancel, with probability 2^-32 for random damage. A mismatch is then located
 * chunk by chunk, so errors name the same bad chunk as before.
 *
 * <p>Thread-safety: immutable.
 */
final class CrcCombiner {
  /** Reflected CRC32C (Castagnoli) polynomial. */
  private static final int CRC32C_POLY = 0x82F63B78;

  /** Reflected CRC32 (zlib) polynomial. */
  private static final int CRC32_POLY = 0xEDB88320;

  private static final CrcCombiner CRC32C_512 = new CrcCombiner(CRC32C_POLY, 512);
  private static final CrcCombiner CRC32_512 = new CrcCombiner(CRC32_POLY, 512);

  private final int poly;
  private final int chunkBytes;

  /** x^(2^k) mod P for k = 0..31. */
  private final int[] powers = new int[32];

  /** Four 256-entry tables: multiplication by x^(8 · chunkBytes), one per byte of the operand. */
  private final int[] shiftTable = new int[1024];

  private CrcCombiner(int poly, int chunkBytes) {
    this.poly = poly;
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
   * The combiner for checksum type {@code type} ({@link MetaHeader#TYPE_CRC32C} or {@link
   * MetaHeader#TYPE_CRC32}) and {@code chunkBytes} per chunk: shared for 512-byte chunks (HDFS's
   * default), built anew (about 30 µs) for other sizes.
   */
  static CrcCombiner of(int type, int chunkBytes) {
    if (type != MetaHeader.TYPE_CRC32C && type != MetaHeader.TYPE_CRC32) {
      throw new IllegalArgumentException("no CRC for checksum type " + type);
    }
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size " + chunkBytes);
    }
    boolean castagnoli = type == MetaHeader.TYPE_CRC32C;
    if (chunkBytes == 512) {
      return castagnoli ? CRC32C_512 : CRC32_512;
    }
    return new CrcCombiner(castagnoli ? CRC32C_POLY : CRC32_POLY, chunkBytes);
  }

  /** The chunk size the fast {@link #append} step is built for. */
  int chunkBytes() {
    return chunkBytes;
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
}
