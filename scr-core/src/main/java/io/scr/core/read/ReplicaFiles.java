package io.scr.core.read;

import java.io.Closeable;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

/**
 * The open files of one local replica: the block data and its meta file (checksums), with the
 * parsed meta header and the replica's length when opened.
 *
 * <p>The meta file is mapped read-only when {@link ChecksumMappings} allows it; its channel is then
 * closed at once (the mapping keeps the file), so the replica holds one fd, and verified reads find
 * their checksums in memory. Otherwise the meta channel stays open and checksums are pread.
 *
 * <p><b>Interrupts.</b> The channels are made uninterruptible when the JVM allows it ({@link
 * UninterruptibleChannels}): a {@code Thread.interrupt()} of one reader then cannot close the
 * channel every lease of this replica shares. Otherwise an interrupt closes it for everyone: {@link
 * #isOpen()} turns false, the cache replaces the replica, and readers that meet the closed channel
 * take a fresh lease (see {@code ScrInputStream}).
 *
 * <p>fd ownership: this object owns the channels and the mapping; {@link #close()} closes the
 * channels and releases the mapping, once. Nothing a reader can reach is unmapped or freed by
 * {@link #close()}: a closed channel throws {@code ClosedChannelException}, and the released
 * mapping reads as zeros until the garbage collector unmaps it ({@link ChecksumMappings}), so even
 * a lease used after its close (a caller's bug) fails with an exception, never a crash. The replica
 * cache closes a replica only after its last lease. Reads use positional {@code FileChannel.read}
 * and absolute buffer reads, safe from many threads at once.
 */
public final class ReplicaFiles implements Closeable {
  private final FileChannel data;
  private final FileChannel meta;
  private final MetaHeader header;
  private final long length;
  private final String blockName;

  /** The mapped meta file, or null (checksums are pread from {@link #meta}). */
  private final MappedByteBuffer sums;

  private volatile boolean closed;

  /**
   * Takes ownership of both channels; checksums will be pread.
   *
   * @param blockName names the block in errors (e.g. {@code BP-1:blk_1073741825_1001})
   */
  public ReplicaFiles(
      FileChannel data, FileChannel meta, MetaHeader header, long length, String blockName) {
    this(data, meta, header, length, blockName, null);
  }

  private ReplicaFiles(
      FileChannel data,
      FileChannel meta,
      MetaHeader header,
      long length,
      String blockName,
      MappedByteBuffer sums) {
    this.data = data;
    this.meta = meta;
    this.header = header;
    this.length = length;
    this.blockName = blockName;
    this.sums = sums;
  }

  /**
   * Opens the replica from its two channels: reads the meta header and the data length, and maps
   * the meta file if it can (closing its channel). On failure both channels are closed.
   */
  public static ReplicaFiles open(FileChannel data, FileChannel meta, String blockName)
      throws IOException {
    return open(data, meta, blockName, true);
  }

  /** As {@link #open(FileChannel, FileChannel, String)}; {@code mapChecksums} false never maps. */
  static ReplicaFiles open(
      FileChannel data, FileChannel meta, String blockName, boolean mapChecksums)
      throws IOException {
    MappedByteBuffer mapped = null;
    try {
      UninterruptibleChannels.apply(data);
      UninterruptibleChannels.apply(meta);
      MetaHeader header = MetaHeader.read(meta);
      long dataLength = data.size();
      if (mapChecksums && header.type() != MetaHeader.TYPE_NULL) {
        mapped = ChecksumMappings.map(meta, meta.size());
      }
      if (mapped != null) {
        meta.close(); // the mapping keeps the file; one fd less per cached replica
      }
      return new ReplicaFiles(data, meta, header, dataLength, blockName, mapped);
    } catch (IOException | RuntimeException e) {
      if (mapped != null) {
        ChecksumMappings.release(mapped);
      }
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

  /** The meta file channel (closed when the checksums are mapped: see {@link #mappedSums()}). */
  public FileChannel meta() {
    return meta;
  }

  /**
   * The whole meta file mapped read-only (big-endian checksums at {@link
   * MetaHeader#checksumOffset}), or null when checksums are pread from {@link #meta()}.
   */
  MappedByteBuffer mappedSums() {
    return sums;
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

  /** File descriptors held: 1 when the meta file is mapped, else 2. */
  public int fdCount() {
    return sums != null ? 1 : 2;
  }

  /** Whether the files are still usable (not closed; the data channel not closed by interrupt). */
  public boolean isOpen() {
    return !closed && data.isOpen() && (sums != null || meta.isOpen());
  }

  /** Whether {@link #close()} has run (a checksum read from the mapping may then be zeros). */
  public boolean isClosed() {
    return closed;
  }

  /** Closes both channels and releases the meta file mapping; idempotent. */
  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      data.close();
    } finally {
      try {
        meta.close();
      } finally {
        if (sums != null) {
          ChecksumMappings.release(sums);
        }
      }
    }
  }
}
