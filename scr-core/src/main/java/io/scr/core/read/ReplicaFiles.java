package io.scr.core.read;

import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.FileChannel;

/**
 * The two open files of one local replica: the block data and its meta file (checksums), with the
 * parsed meta header and the replica's length when opened.
 *
 * <p>fd ownership: this object owns both channels; {@link #close()} closes them, once. Reads use
 * positional {@code FileChannel.read}, which is safe from many threads at once.
 */
public final class ReplicaFiles implements Closeable {
  private final FileChannel data;
  private final FileChannel meta;
  private final MetaHeader header;
  private final long length;
  private final String blockName;

  /**
   * Takes ownership of both channels.
   *
   * @param blockName names the block in errors (e.g. {@code BP-1:blk_1073741825_1001})
   */
  public ReplicaFiles(
      FileChannel data, FileChannel meta, MetaHeader header, long length, String blockName) {
    this.data = data;
    this.meta = meta;
    this.header = header;
    this.length = length;
    this.blockName = blockName;
  }

  /**
   * Opens the replica from its two channels: reads the meta header and the data length. On failure
   * both channels are closed.
   */
  public static ReplicaFiles open(FileChannel data, FileChannel meta, String blockName)
      throws IOException {
    try {
      MetaHeader header = MetaHeader.read(meta);
      return new ReplicaFiles(data, meta, header, data.size(), blockName);
    } catch (IOException | RuntimeException e) {
      try {
        data.close();
      } finally {
        meta.close();
      }
      throw e;
    }
  }

  /** The block data channel. */
  public FileChannel data() {
    return data;
  }

  /** The meta file channel. */
  public FileChannel meta() {
    return meta;
  }

  /** The meta header. */
  public MetaHeader header() {
    return header;
  }

  /** Bytes in the data file when opened. */
  public long length() {
    return length;
  }

  /** The block, for error messages. */
  public String blockName() {
    return blockName;
  }

  /** Whether both channels are still open. */
  public boolean isOpen() {
    return data.isOpen() && meta.isOpen();
  }

  /** Closes both channels; idempotent. */
  @Override
  public void close() throws IOException {
    try {
      data.close();
    } finally {
      meta.close();
    }
  }
}
