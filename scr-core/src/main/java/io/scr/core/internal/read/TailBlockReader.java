package io.scr.core.internal.read;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.Checksum;
import org.apache.hadoop.fs.ChecksumException;

/**
 * Positional reads of a replica whose block is being written (opened with {@link
 * ReplicaFiles#openGrowing}), bounded by the reader's visible length and by the bytes on disk.
 *
 * <p>Whole chunks are verified against the meta file, where their checksums are final. The last,
 * partial chunk is verified against one of two checksums:
 *
 * <ul>
 *   <li><b>The DataNode's snapshot</b> ({@link TailSnapshot}, from a shim): the checksum the
 *       DataNode holds in memory for exactly the bytes it had on disk. The chunk verifies unless a
 *       recovery moved the tail.
 *   <li><b>The meta file's last checksum</b> (a stock DataNode): the DataNode rewrites it in place
 *       each time the chunk grows, after writing the chunk's new bytes, so at any instant it covers
 *       the chunk up to some length at most the block file's size. The bytes read are accepted when
 *       their CRC up to the visible length, or up to the block file's size, equals it: then those
 *       bytes are the ones the DataNode checksummed. Two candidate lengths keep the chance of
 *       accepting a corrupt chunk at twice a single CRC's, 2<sup>-31</sup>. Otherwise the DataNode
 *       is between its two writes, and the read reports {@link
 *       TailNotReadyException.Reason#PARTIAL_CHUNK} for its caller to try again or read stock.
 * </ul>
 *
 * <p>A read never returns a byte at or past the visible length, nor one the checks above did not
 * verify, and never reports corruption: a mismatch in a block being written is the writer's race
 * ({@link TailNotReadyException}) until a stock read, which verifies the same bytes, says
 * otherwise.
 *
 * <p>Thread-safety: thread-safe and stateless apart from the test seam; buffers are the caller's
 * per-thread {@link ReadContext}.
 */
public final class TailBlockReader {
  /**
   * Run between reading a tail's data and reading its checksums (tests only: a writer may move the
   * tail there); null in production.
   */
  private volatile Runnable afterTailDataRead;

  /**
   * Sets (or with null clears) what {@link #read} runs between reading the data of a replica being
   * written and reading its checksums: a seam for tests to move the tail in that window.
   */
  public void afterTailDataRead(Runnable hook) {
    this.afterTailDataRead = hook;
  }

  /**
   * Reads up to {@code dst.remaining()} bytes at {@code position} of {@code replica}, never past
   * {@code visibleLength} (the reader's visible length of the block) and never a byte not yet on
   * disk.
   *
   * <p>With verification, whole chunks are verified against the meta file and the partial last
   * chunk against {@code tail}, the DataNode's consistent in-memory pair (bytes on disk, last
   * checksum), or without one ({@code tail} null: a stock DataNode) against the meta file's last
   * checksum as the class describes. Without verification, every byte below both the visible length
   * and the block file's size (below the snapshot's bytes on disk when there is one) is served.
   *
   * @return bytes read (at least one), or -1 at or past {@code visibleLength}
   * @throws TailNotReadyException when nothing can be served now (never a corruption)
   */
  public int read(
      ReplicaFiles replica,
      long position,
      ByteBuffer dst,
      long visibleLength,
      TailSnapshot tail,
      boolean verify,
      ReadContext s)
      throws IOException {
    if (position < 0) {
      throw new IllegalArgumentException("negative block offset " + position);
    }
    if (position >= visibleLength) {
      return -1;
    }
    int want = (int) Math.min(dst.remaining(), visibleLength - position);
    if (want == 0) {
      return 0;
    }
    MetaHeader header = replica.header();
    int bpc = header.bytesPerChecksum();
    long size = replica.data().size();
    if (!verify || header.type() == MetaHeader.TYPE_NULL) {
      return readUnverified(replica, position, dst, want, visibleLength, tail, size, s);
    }
    // Up to where the bytes can be verified: the snapshot's bytes on disk (its last checksum covers
    // the partial chunk), else the block file's size (the meta file's last checksum may cover it).
    long verifiableEnd;
    long stableSumsEnd; // below this every checksum in the meta file is final
    boolean partialTail;
    if (tail != null && tail.beingWritten()) {
      verifiableEnd = tail.dataLength();
      stableSumsEnd = verifiableEnd - verifiableEnd % bpc;
      partialTail = stableSumsEnd < verifiableEnd;
      if (partialTail && tail.lastChecksumSize() != header.checksumSize()) {
        partialTail = false;
        verifiableEnd = stableSumsEnd;
      }
      if (verifiableEnd > size) {
        // A recovery truncated the file below what the snapshot saw: the snapshot is stale.
        throw new TailNotReadyException(
            TailNotReadyException.Reason.TAIL_MOVED,
            replica.blockName() + " is " + size + " bytes on disk, less than " + tail);
      }
    } else if (tail != null) {
      verifiableEnd = Math.min(tail.dataLength(), size); // finalized: every checksum is final
      stableSumsEnd = verifiableEnd;
      partialTail = false;
    } else {
      verifiableEnd = size;
      stableSumsEnd = size - size % bpc;
      partialTail = stableSumsEnd < size;
    }
    long end = Math.min(position + want, verifiableEnd);
    if (end <= position) {
      throw notOnDisk(replica, position, visibleLength, verifiableEnd);
    }
    long alignedStart = position - position % bpc;
    ByteBuffer data = s.data(bpc);
    int chunksFit = Math.min(data.capacity() / bpc, ReadContext.MAX_CHUNKS_PER_READ);
    long alignedEnd = Math.min(((end + bpc - 1) / bpc) * bpc, verifiableEnd);
    alignedEnd = Math.min(alignedEnd, alignedStart + (long) chunksFit * bpc);
    end = Math.min(end, alignedEnd);
    int span = (int) (alignedEnd - alignedStart);
    data.clear().limit(span);
    int n = LocalBlockReader.readFully(replica.data(), data, alignedStart, span);
    if (n < span) {
      throw notOnDisk(replica, alignedStart + n, visibleLength, alignedStart + span);
    }
    Runnable hook = afterTailDataRead;
    if (hook != null) {
      hook.run();
    }
    // Whole chunks against the meta file; the first that fails (or has no checksum yet) ends what
    // this read serves: a writer's race, never a corruption here.
    long wholeEnd = Math.min(alignedEnd, stableSumsEnd);
    long verifiedEnd = alignedEnd;
    if (wholeEnd > alignedStart) {
      ByteBuffer sums;
      try {
        sums =
            replica.checksums().readSums(replica, alignedStart, (int) (wholeEnd - alignedStart), s);
      } catch (ChecksumException metaShort) {
        // The first chunk whose checksum is not written yet, by the meta file's size now.
        long sumsWritten =
            (replica.meta().size() - header.checksumOffset(0)) / header.checksumSize();
        long withSums = Math.max(0, sumsWritten) * bpc;
        if (withSums <= alignedStart || withSums >= wholeEnd) {
          throw tailMoved(replica, alignedStart, metaShort);
        }
        wholeEnd = withSums;
        verifiedEnd = withSums;
        sums =
            replica.checksums().readSums(replica, alignedStart, (int) (wholeEnd - alignedStart), s);
      }
      try {
        replica
            .checksums()
            .verifyChunks(
                replica, data, 0, alignedStart, (int) (wholeEnd - alignedStart), sums, s, null);
      } catch (ChecksumException e) {
        if (e.getPos() <= position) {
          throw tailMoved(replica, e.getPos(), e);
        }
        verifiedEnd = e.getPos(); // the chunks before the one that failed were verified
      }
    }
    if (verifiedEnd == alignedEnd && partialTail && alignedEnd > stableSumsEnd) {
      verifiedEnd =
          tail != null
              ? verifySnapshotTail(replica, data, alignedStart, alignedEnd, stableSumsEnd, tail, s)
              : verifyOnDiskTail(
                  replica, data, alignedStart, alignedEnd, stableSumsEnd, visibleLength, s);
      if (verifiedEnd <= position) {
        throw new TailNotReadyException(
            tail != null
                ? TailNotReadyException.Reason.TAIL_MOVED
                : TailNotReadyException.Reason.PARTIAL_CHUNK,
            "the partial last chunk of "
                + replica.blockName()
                + " at block offset "
                + stableSumsEnd
                + " does not match "
                + (tail != null ? tail : "the meta file's last checksum yet"));
      }
    }
    end = Math.min(end, verifiedEnd);
    int from = (int) (position - alignedStart);
    data.limit((int) (end - alignedStart)).position(from);
    int got = (int) (end - position);
    dst.put(data);
    return got;
  }

  /**
   * Where the verified bytes end, given the partial chunk {@code [chunkStart, alignedEnd)} held in
   * {@code data} (from block offset {@code alignedStart}) and the snapshot whose last checksum
   * covers exactly that chunk: {@code alignedEnd} on a match, else {@code chunkStart}.
   */
  private static long verifySnapshotTail(
      ReplicaFiles replica,
      ByteBuffer data,
      long alignedStart,
      long alignedEnd,
      long chunkStart,
      TailSnapshot tail,
      ReadContext s) {
    Checksum crc = crcOf(replica, s);
    crc.reset();
    data.limit((int) (alignedEnd - alignedStart)).position((int) (chunkStart - alignedStart));
    crc.update(data);
    return (int) crc.getValue() == tail.lastChecksumInt() ? alignedEnd : chunkStart;
  }

  /**
   * Where the verified bytes end, given the partial chunk {@code [chunkStart, alignedEnd)} (the
   * block file's end) held in {@code data}, against the meta file's last checksum: the visible
   * length when the chunk's CRC up to it matches, else {@code alignedEnd} when the whole chunk's
   * does, else {@code chunkStart} (the checksum is for another length: the DataNode is between
   * writing the chunk's bytes and its checksum, or not written yet).
   */
  private static long verifyOnDiskTail(
      ReplicaFiles replica,
      ByteBuffer data,
      long alignedStart,
      long alignedEnd,
      long chunkStart,
      long visibleLength,
      ReadContext s)
      throws IOException {
    int stored;
    try {
      ByteBuffer sums = replica.checksums().readSums(replica, chunkStart, 1, s);
      stored = sums.getInt(s.sumsBase);
    } catch (ChecksumException metaShort) {
      return chunkStart; // its checksum is not written yet
    }
    Checksum crc = crcOf(replica, s);
    crc.reset();
    int base = (int) (chunkStart - alignedStart);
    if (visibleLength > chunkStart && visibleLength < alignedEnd) {
      data.limit((int) (visibleLength - alignedStart)).position(base);
      crc.update(data);
      if ((int) crc.getValue() == stored) {
        return visibleLength;
      }
      data.limit((int) (alignedEnd - alignedStart)); // update on from the visible length
    } else {
      data.limit((int) (alignedEnd - alignedStart)).position(base);
    }
    crc.update(data);
    return (int) crc.getValue() == stored ? alignedEnd : chunkStart;
  }

  private static Checksum crcOf(ReplicaFiles replica, ReadContext s) {
    return replica.header().type() == MetaHeader.TYPE_CRC32C ? s.crc32c : s.crc32;
  }

  private static int readUnverified(
      ReplicaFiles replica,
      long position,
      ByteBuffer dst,
      int want,
      long visibleLength,
      TailSnapshot tail,
      long size,
      ReadContext s)
      throws IOException {
    long onDisk = tail != null ? Math.min(tail.dataLength(), size) : size;
    int n = (int) Math.min(want, onDisk - position);
    if (n <= 0) {
      throw notOnDisk(replica, position, visibleLength, onDisk);
    }
    ByteBuffer data = s.data(replica.header().bytesPerChecksum());
    n = Math.min(n, data.capacity());
    data.clear().limit(n);
    int got = LocalBlockReader.readFully(replica.data(), data, position, n);
    if (got <= 0) {
      throw notOnDisk(replica, position, visibleLength, position + got);
    }
    data.flip();
    dst.put(data);
    return got;
  }

  private static TailNotReadyException tailMoved(
      ReplicaFiles replica, long offset, IOException cause) {
    TailNotReadyException e =
        new TailNotReadyException(
            TailNotReadyException.Reason.TAIL_MOVED,
            "the chunk at block offset "
                + offset
                + " of "
                + replica.blockName()
                + ", being written, has no matching checksum yet");
    e.initCause(cause);
    return e;
  }

  private static TailNotReadyException notOnDisk(
      ReplicaFiles replica, long position, long visibleLength, long onDisk) {
    return new TailNotReadyException(
        TailNotReadyException.Reason.NOT_ON_DISK,
        "block offset "
            + position
            + " of "
            + replica.blockName()
            + " is visible (visible length "
            + visibleLength
            + ") but only "
            + onDisk
            + " bytes are on disk with their checksums");
  }
}
