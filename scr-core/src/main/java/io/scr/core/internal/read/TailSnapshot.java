package io.scr.core.internal.read;

import java.util.Arrays;

/**
 * What a DataNode knows of a replica at one instant, from its memory rather than its files: the
 * generation stamp, whether the replica is still being written, the visible length (the bytes the
 * whole pipeline acknowledged), and the consistent pair of the bytes on disk and the checksum of
 * the last, partial chunk ({@code ReplicaInPipeline.getLastChecksumAndDataLen}). The meta file's
 * last checksum is rewritten in place while that chunk fills, so only this pair verifies the
 * partial tail chunk; every whole chunk below it is stable in the meta file.
 *
 * <p>A snapshot stays true for the bytes it covers: bytes below {@link #dataLength()} never change
 * while the generation stamp stands (pipeline recovery bumps it), and the partial chunk's checksum
 * covers exactly {@code [tailChunkStart, dataLength)} whatever the writer appends later.
 *
 * <p>Immutable.
 */
public final class TailSnapshot {
  private final long generationStamp;
  private final boolean beingWritten;
  private final long visibleLength;
  private final long dataLength;
  private final byte[] lastChecksum;

  /**
   * @param beingWritten false for a finalized replica: every chunk, the last included, is then
   *     stable in the meta file
   * @param lastChecksum the checksum of the partial last chunk, {@code [dataLength - dataLength %
   *     bytesPerChecksum, dataLength)}, big-endian; null when the data ends on a chunk boundary or
   *     the replica is finalized
   */
  public TailSnapshot(
      long generationStamp,
      boolean beingWritten,
      long visibleLength,
      long dataLength,
      byte[] lastChecksum) {
    this.generationStamp = generationStamp;
    this.beingWritten = beingWritten;
    this.visibleLength = visibleLength;
    this.dataLength = dataLength;
    this.lastChecksum = lastChecksum == null ? null : lastChecksum.clone();
  }

  /** The replica's generation stamp on the DataNode. */
  public long generationStamp() {
    return generationStamp;
  }

  /** Whether the replica is still being written (RBW); false once finalized. */
  public boolean beingWritten() {
    return beingWritten;
  }

  /** Bytes every DataNode of the pipeline acknowledged (the replica's visible length). */
  public long visibleLength() {
    return visibleLength;
  }

  /** Bytes written to the block file with their checksums, per the DataNode's memory. */
  public long dataLength() {
    return dataLength;
  }

  /** Whether {@link #lastChecksum} is present. */
  public boolean hasLastChecksum() {
    return lastChecksum != null;
  }

  /** The last checksum as an int (CRC32 and CRC32C are 4 bytes); only if present. */
  int lastChecksumInt() {
    return ((lastChecksum[0] & 0xff) << 24)
        | ((lastChecksum[1] & 0xff) << 16)
        | ((lastChecksum[2] & 0xff) << 8)
        | (lastChecksum[3] & 0xff);
  }

  /** The length of the last checksum in bytes, or 0 when absent. */
  int lastChecksumSize() {
    return lastChecksum == null ? 0 : lastChecksum.length;
  }

  @Override
  public String toString() {
    return "TailSnapshot{gs="
        + generationStamp
        + (beingWritten ? ", being written" : ", finalized")
        + ", visible="
        + visibleLength
        + ", onDisk="
        + dataLength
        + ", lastChecksum="
        + (lastChecksum == null ? "-" : Arrays.toString(lastChecksum))
        + "}";
  }
}
