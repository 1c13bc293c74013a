package io.scr.core.internal.read;

import io.scr.core.ScrKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import org.apache.hadoop.fs.ChecksumException;

/**
 * Positional reads of a local replica straight into the caller's buffer (heap or direct), verifying
 * only the checksum chunks that cover the request with {@code java.util.zip} CRC32C or CRC32
 * (hardware-accelerated intrinsics on x86 and arm64).
 *
 * <p>Per read:
 *
 * <ul>
 *   <li>Without verification: one {@code pread} into the caller's buffer, exactly like a raw read.
 *   <li>With verification and a request that starts on a chunk boundary: one {@code pread} of the
 *       data into the caller's buffer (trimmed to end on a chunk boundary or at the end of the
 *       replica), one {@code pread} of the covering checksums, then CRC over the caller's bytes.
 *   <li>Otherwise (an unaligned start, or a short unaligned read): one {@code pread} of the
 *       covering chunks into a per-thread scratch buffer, one {@code pread} of checksums, CRC, then
 *       a copy of the requested bytes. Larger unaligned requests are served in pieces of at most
 *       the scratch size, which the caller's read loop continues.
 *   <li>Into a heap buffer, a request that fits the scratch always goes through it (the copy a heap
 *       {@code FileChannel} read makes anyway).
 * </ul>
 *
 * <p><b>Mapped reads</b> (off unless constructed with a {@link MappedReads} policy): every {@code
 * pread} of data above becomes a copy from the replica's block-file mapping once the replica is hot
 * (see {@link MappedReads}); verification is the same, over the copy, never over the mapping. With
 * the meta file mapped too, such a read makes no syscall at all. A copy that meets a page the block
 * file no longer has (truncated under the reader) raises the JVM's {@code InternalError}; one that
 * reaches the read (in the copy, or delivered later in the same read) becomes an {@code
 * IOException}, and a CRC mismatch over a block file found shorter than at open an {@code
 * EOFException}, never a checksum error; the JVM may also deliver the error after the read
 * returned, outside scr (the residual risk {@link MappedReads} describes).
 *
 * <p>"One {@code pread} of checksums" applies only when the checksums are not in memory ({@link
 * ReplicaFiles#open} copies or maps them when it can): then they are memory reads and a verified
 * read makes exactly the data {@code pread} a raw read makes.
 *
 * <p>A read may return fewer bytes than requested (never zero unless {@code dst} has no room); -1
 * means {@code position} is at or past the replica's length. A checksum mismatch throws {@link
 * ChecksumException} naming the file (or the block when the file is unknown), the block and the
 * offset of the bad chunk; nothing is copied for a request that fails verification on the scratch
 * path, and on the direct path {@code dst}'s position is left unchanged (its bytes are garbage).
 *
 * <p>Thread-safety: thread-safe and stateless apart from the mapped-read policy; many threads may
 * read the same replica concurrently. Buffers are the caller's per-thread {@link ReadContext} (one
 * scratch of the configured size and one checksum buffer, direct), never per stream or per read;
 * the hit path allocates nothing beyond them.
 */
public final class LocalBlockReader {
  /** The mapped-read policy, or null: every read is a {@code pread}. */
  private final MappedReads mapped;

  /** A reader whose every read is a {@code pread}. */
  public LocalBlockReader() {
    this(null);
  }

  /**
   * @param mapped the mapped-read policy, or null for none (every read a {@code pread})
   */
  public LocalBlockReader(MappedReads mapped) {
    this.mapped = mapped;
  }

  /**
   * Reads up to {@code dst.remaining()} bytes of {@code replica} at {@code position} into {@code
   * dst} (heap or direct), advancing its position by the count returned. A heap {@code dst} that
   * the request fits the scratch of is filled through the scratch (one {@code pread} into direct
   * memory and one copy, which {@code FileChannel} makes for a heap buffer anyway).
   *
   * @param verify whether to verify checksums (ignored when the meta file has type NULL)
   * @param fileName the HDFS file, for error messages; null when unknown
   * @param s the reading thread's buffers
   */
  public int read(
      ReplicaFiles replica,
      long position,
      ByteBuffer dst,
      boolean verify,
      String fileName,
      ReadContext s)
      throws IOException {
    try {
      return readChecked(replica, position, dst, verify, fileName, s);
    } catch (InternalError e) {
      throw faultOrRethrow(replica, position, e);
    } catch (RuntimeException e) {
      throw faultOrRethrow(replica, position, e);
    }
  }

  private int readChecked(
      ReplicaFiles replica,
      long position,
      ByteBuffer dst,
      boolean verify,
      String fileName,
      ReadContext s)
      throws IOException {
    if (position < 0) {
      throw new IllegalArgumentException("negative block offset " + position);
    }
    long length = replica.length();
    if (position >= length) {
      return -1;
    }
    int want = (int) Math.min(dst.remaining(), length - position);
    if (want == 0) {
      return 0;
    }
    int bpc = replica.bytesPerChecksum();
    ByteBuffer map =
        mapped == null || replica.isGrowing() ? null : mapping(replica, position, want, bpc, s);
    boolean viaScratch = !dst.isDirect() && want <= s.size();
    ChunkChecksums checksums = replica.checksums();
    if (!verify || checksums == null) {
      if (viaScratch && map == null) {
        return readUnverifiedViaScratch(replica, position, dst, want, s);
      }
      // Straight into the caller's buffer: a pread (HBase's path: it checks its own checksums),
      // or one copy out of the mapping.
      return readInto(replica, map, dst, position, want);
    }
    long end = position + want;
    boolean startAligned = position % bpc == 0;
    boolean endAligned = end % bpc == 0 || end == length;
    if (!viaScratch && startAligned && (endAligned || want >= bpc)) {
      if (!endAligned) {
        want -= (int) (end % bpc);
      }
      long maxBytes = (long) ReadContext.MAX_CHUNKS_PER_READ * bpc;
      if (want > maxBytes) {
        want = (int) maxBytes;
      }
      return readDirectVerified(replica, checksums, map, position, dst, want, s, fileName);
    }
    int n = fillScratch(replica, checksums, map, position, want, s, fileName);
    dst.put(s.data(bpc));
    return n;
  }

  /**
   * A view of the replica's block-file mapping to copy {@code [position, position + want)} (and the
   * chunks around it) from, or null when the read is a {@code pread}: the replica not hot yet, or
   * its block file not mappable (counted as a fallback). The view is this thread's ({@link
   * ReadContext#view}); its position and limit are the caller's.
   */
  private ByteBuffer mapping(
      ReplicaFiles replica, long position, int want, int bpc, ReadContext s) {
    MappedReads policy = mapped;
    MappedByteBuffer map = replica.dataMapping();
    if (map == null) {
      int reads = replica.noteUnmappedRead();
      if (reads < policy.minReads()) {
        return null;
      }
      map = replica.mapForReads(policy.budget(), reads);
      if (map == null) {
        if (!replica.isClosed()) {
          policy.recordFallback(replica, "its block file could not be mapped");
        }
        return null;
      }
    }
    // The covering chunks end at most one chunk past the request, and never past the replica.
    long coveringEnd = Math.min(position + want + bpc, replica.length());
    if (coveringEnd > map.capacity()) {
      policy.recordFallback(replica, "the read lies past 2 GiB into the block file");
      return null;
    }
    policy.recordRead();
    return s.view(map);
  }

  /** An unverified read into a heap buffer: one {@code pread} into the scratch, one copy. */
  private static int readUnverifiedViaScratch(
      ReplicaFiles replica, long position, ByteBuffer dst, int want, ReadContext s)
      throws IOException {
    ByteBuffer data = s.data(replica.bytesPerChecksum());
    data.clear().limit(want);
    int n = readFully(replica.data(), data, position, want);
    if (n == 0) {
      throw shortData(replica, position, want, 0);
    }
    data.flip();
    dst.put(data);
    return n;
  }

  private int readDirectVerified(
      ReplicaFiles replica,
      ChunkChecksums checksums,
      ByteBuffer map,
      long position,
      ByteBuffer dst,
      int want,
      ReadContext s,
      String fileName)
      throws IOException {
    int start = dst.position();
    int limit = dst.limit();
    dst.limit(start + want);
    int n;
    try {
      n = readFully(replica, map, dst, position, want);
    } finally {
      dst.limit(limit);
    }
    if (n < want) {
      dst.position(start);
      throw shortData(replica, position, want, n);
    }
    ByteBuffer sums = checksums.readSums(replica, position, want, s);
    dst.position(start);
    try {
      checksums.verifyChunks(replica, dst, start, position, want, sums, s, fileName);
    } catch (IOException | RuntimeException e) {
      dst.position(start); // nothing of this read is returned
      throw e;
    } finally {
      dst.limit(limit);
    }
    dst.position(start + want);
    return want;
  }

  /**
   * Reads and verifies the chunks covering {@code [position, position + want)}, as many as fit the
   * scratch, into the scratch; returns how many of the requested bytes it holds (at least one),
   * with the scratch's position and limit around them.
   */
  private static int fillScratch(
      ReplicaFiles replica,
      ChunkChecksums checksums,
      ByteBuffer map,
      long position,
      int want,
      ReadContext s,
      String fileName)
      throws IOException {
    int bpc = checksums.chunkBytes();
    long length = replica.length();
    long alignedStart = position - position % bpc;
    ByteBuffer data = s.data(bpc);
    int chunksFit = Math.min(data.capacity() / bpc, ReadContext.MAX_CHUNKS_PER_READ);
    long alignedEnd = Math.min(((position + want + bpc - 1) / bpc) * bpc, length);
    alignedEnd = Math.min(alignedEnd, alignedStart + (long) chunksFit * bpc);
    int span = (int) (alignedEnd - alignedStart);
    want = (int) Math.min(want, alignedEnd - position);
    data.clear().limit(span);
    int n = readFully(replica, map, data, alignedStart, span);
    if (n < span) {
      throw shortData(replica, alignedStart, span, n);
    }
    ByteBuffer sums = checksums.readSums(replica, alignedStart, span, s);
    checksums.verifyChunks(replica, data, 0, alignedStart, span, sums, s, fileName);
    int from = (int) (position - alignedStart);
    data.limit(from + want).position(from);
    return want;
  }

  private static int readInto(
      ReplicaFiles replica, ByteBuffer map, ByteBuffer dst, long position, int want)
      throws IOException {
    int limit = dst.limit();
    dst.limit(dst.position() + want);
    try {
      int n = readFully(replica, map, dst, position, want);
      if (n == 0) {
        throw shortData(replica, position, want, 0);
      }
      return n;
    } finally {
      dst.limit(limit);
    }
  }

  /**
   * Reads {@code want} bytes at {@code position} into {@code dst}: a copy from {@code map} (the
   * replica's block-file mapping, a view this thread owns) when there is one, else {@code pread}s.
   */
  private static int readFully(
      ReplicaFiles replica, ByteBuffer map, ByteBuffer dst, long position, int want)
      throws IOException {
    if (map == null) {
      return readFully(replica.data(), dst, position, want);
    }
    positionView(map, position, want);
    try {
      dst.put(map);
    } catch (InternalError e) {
      throw mappedFault(replica, position, e);
    }
    return want;
  }

  /**
   * An {@code InternalError} that reached a read: with mapped reads on, most likely the fault of a
   * copy out of a block-file mapping that the JVM delivered after the copy (asynchronously, at a
   * safepoint later in the same read, as seen in {@code MappedBlockReadTest}); turned into the same
   * {@code IOException} as one caught at the copy. Otherwise rethrown: not ours to explain.
   */
  private IOException faultOrRethrow(ReplicaFiles replica, long position, InternalError e) {
    if (mapped == null) {
      throw e;
    }
    return mappedFault(replica, position, e);
  }

  /**
   * A {@code RuntimeException} that reached a read of a mapped replica whose block file is now
   * shorter than the replica: the JDK lets an access to a mapping whose file was truncated throw
   * "an unspecified exception" ({@link java.nio.MappedByteBuffer}), and HotSpot may deliver its
   * fault at a later point of the same read, where code that relied on the copy then fails
   * otherwise ({@code MappedBlockReadTest} once saw an {@code ArrayIndexOutOfBoundsException}).
   * Turned into the fault's {@code IOException}, which the HDFS client answers by reading from
   * another replica, as for any failed short-circuit read; anything else is rethrown (a bug is not
   * a truncation). The {@code fstat} is on this failure path only.
   */
  private IOException faultOrRethrow(ReplicaFiles replica, long position, RuntimeException e) {
    if (mapped == null || replica.dataMapping() == null) {
      throw e;
    }
    try {
      if (replica.data().size() >= replica.length()) {
        throw e;
      }
    } catch (IOException unknown) {
      e.addSuppressed(unknown);
      throw e;
    }
    return mappedFault(replica, position, e);
  }

  /** Points this thread's view of a mapping at {@code [position, position + want)}. */
  private static void positionView(ByteBuffer view, long position, int want) {
    view.clear();
    view.position((int) position).limit((int) (position + want));
  }

  /**
   * What a copy out of a block-file mapping (an {@code Unsafe} copy) throws when it met a page the
   * block file no longer has (truncated under the reader, or a disk error): the JVM turns the
   * {@code SIGBUS} into an {@code InternalError}, caught where it surfaces in the copying frame;
   * the JVM may instead deliver it later (see {@link MappedReads}).
   */
  private static IOException mappedFault(ReplicaFiles replica, long position, Throwable e) {
    return new IOException(
        "the block file of "
            + replica.blockName()
            + " faulted under a mapped read at block offset "
            + position
            + " (truncated under the replica, opened with "
            + replica.length()
            + " bytes, or a disk error); turn "
            + ScrKeys.READ_MAPPED_ENABLED.name()
            + " off if this"
            + " recurs",
        e);
  }

  static int readFully(FileChannel ch, ByteBuffer dst, long position, int want) throws IOException {
    int done = 0;
    try {
      while (done < want) {
        int n = ch.read(dst, position + done);
        if (n < 0) {
          break;
        }
        done += n;
      }
    } catch (java.nio.channels.ClosedByInterruptException e) {
      // This thread's interrupt closed a channel other leases share (interruptible channels only).
      UninterruptibleChannels.noteInterruptClosedAChannel();
      throw e;
    }
    return done;
  }

  static IOException shortData(ReplicaFiles replica, long position, int want, int got) {
    return new java.io.EOFException(
        "replica "
            + replica.blockName()
            + " ended early: wanted "
            + want
            + " bytes at block offset "
            + position
            + ", got "
            + got
            + " (length when opened: "
            + replica.length()
            + "); the replica was truncated or replaced");
  }
}
