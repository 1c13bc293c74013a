package io.scr.core.internal.read;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * The 7-byte header of a block's meta file: version (short, big-endian, must be 1), checksum type
 * id (byte: 0 NULL, 1 CRC32, 2 CRC32C), bytes per checksum (int, big-endian, > 0). Checksums follow
 * at offset 7, one big-endian value per chunk. Immutable.
 */
public final class MetaHeader {
  /** Header length in bytes; the first checksum starts here. */
  public static final int HEADER_BYTES = 7;

  /** The only meta-file version. */
  public static final int VERSION = 1;

  /** Checksum type NULL: no checksums. */
  public static final int TYPE_NULL = 0;

  /** Checksum type CRC32 (zlib polynomial). */
  public static final int TYPE_CRC32 = 1;

  /** Checksum type CRC32C (Castagnoli). */
  public static final int TYPE_CRC32C = 2;

  private final int type;
  private final int bytesPerChecksum;

  private MetaHeader(int type, int bytesPerChecksum) {
    this.type = type;
    this.bytesPerChecksum = bytesPerChecksum;
  }

  /** A header with these fields (for tests and writers). */
  public static MetaHeader of(int type, int bytesPerChecksum) throws CorruptMetaException {
    validate(VERSION, type, bytesPerChecksum);
    return new MetaHeader(type, bytesPerChecksum);
  }

  /**
   * Parses the 7 bytes at {@code buf}'s position (the position is not moved).
   *
   * @throws CorruptMetaException when the version, type or chunk size is not valid
   */
  public static MetaHeader parse(ByteBuffer buf) throws CorruptMetaException {
    if (buf.remaining() < HEADER_BYTES) {
      throw new CorruptMetaException(
          "meta file header is " + buf.remaining() + " bytes, expected " + HEADER_BYTES);
    }
    int p = buf.position();
    int version = ((buf.get(p) & 0xff) << 8) | (buf.get(p + 1) & 0xff);
    int type = buf.get(p + 2) & 0xff;
    int bpc =
        ((buf.get(p + 3) & 0xff) << 24)
            | ((buf.get(p + 4) & 0xff) << 16)
            | ((buf.get(p + 5) & 0xff) << 8)
            | (buf.get(p + 6) & 0xff);
    validate(version, type, bpc);
    return new MetaHeader(type, bpc);
  }

  /** Reads and parses the header at offset 0 of {@code meta} (one pread). */
  public static MetaHeader read(FileChannel meta) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(HEADER_BYTES);
    while (buf.hasRemaining()) {
      if (meta.read(buf, buf.position()) < 0) {
        break;
      }
    }
    buf.flip();
    return parse(buf);
  }

  private static void validate(int version, int type, int bpc) throws CorruptMetaException {
    if (version != VERSION) {
      throw new CorruptMetaException("unsupported meta file version " + version + ", expected 1");
    }
    if (type != TYPE_NULL && type != TYPE_CRC32 && type != TYPE_CRC32C) {
      throw new CorruptMetaException("unsupported checksum type id " + type);
    }
    if (bpc <= 0) {
      throw new CorruptMetaException("invalid bytes per checksum " + bpc);
    }
  }

  /** Checksum type id. */
  public int type() {
    return type;
  }

  /** Data bytes covered by one checksum. */
  public int bytesPerChecksum() {
    return bytesPerChecksum;
  }

  /** Bytes per checksum value: 4 for CRC32 and CRC32C, 0 for NULL. */
  public int checksumSize() {
    return type == TYPE_NULL ? 0 : 4;
  }

  /** Offset in the meta file of the checksum of chunk {@code chunk}. */
  public long checksumOffset(long chunk) {
    return HEADER_BYTES + chunk * checksumSize();
  }

  @Override
  public String toString() {
    String name = type == TYPE_CRC32C ? "CRC32C" : type == TYPE_CRC32 ? "CRC32" : "NULL";
    return name + "/" + bytesPerChecksum;
  }
}
