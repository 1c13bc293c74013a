package io.scr.core.read;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
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
 *   <li>Into a {@code byte[]}, a request that fits the scratch always goes through it (the copy a
 *       heap {@code FileChannel} read makes anyway), so no {@code ByteBuffer} wraps the array.
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
 * <p>Thread-safety: thread-safe; many threads may read the same replica concurrently. Buffers are
 * per thread (one scratch of the configured size and one checksum buffer, direct), never per stream
 * or per read; the hit path allocates nothing beyond them. {@link #close()} drops every thread's
 * buffers (each thread's thread-local keeps only an empty holder), so nothing per thread outlives
 * the engine; it frees nothing itself, because another thread may be reading into them right now:
 * they go with the garbage collector once that read ends.
 */
public final class LocalBlockReader {
  private static final int MAX_CHUNKS_PER_READ = 4096;

  private final int scratchBytes;
  private final ThreadLocal<ScratchHolder> scratch;

  /** The mapped-read policy, or null: every read is a {@code pread}. */
  private final MappedReads mapped;

  /**
   * Every thread's holder, so that {@link #close()} can empty them. Weak: a holder goes with its
   * thread. Guarded by its own monitor; touched once per thread and by close.
   */
  private final Set<ScratchHolder> holders =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private volatile boolean closed;

  /**
   * @param scratchBytes size of the per-thread scratch for unaligned checksummed reads
   */
  public LocalBlockReader(int scratchBytes) {
    this(scratchBytes, null);
  }

  /**
   * @param scratchBytes size of the per-thread scratch for unaligned checksummed reads
   * @param mapped the mapped-read policy, or null for none (every read a {@code pread})
   */
  public LocalBlockReader(int scratchBytes, MappedReads mapped) {
    this.mapped = mapped;
    if (scratchBytes < 512) {
      throw new IllegalArgumentException("scratch must be at least 512 bytes: " + scratchBytes);
    }
    this.scratchBytes = scratchBytes;
    this.scratch =
        ThreadLocal.withInitial(
            () -> {
              ScratchHolder h = new ScratchHolder();
              holders.add(h);
              return h;
            });
  }

  /**
   * This thread's buffers. After {@link #close()} (a lease that outlived its engine) a read gets
   * buffers of its own, which are not kept.
   */
  private Scratch scratch() {
    ScratchHolder h = scratch.get();
    Scratch s = h.scratch;
    if (s == null) {
      s = new Scratch(scratchBytes);
      h.scratch = s;
      // Written before reading the flag, as close() writes the flag before emptying holders: one
      // of the two sees the other, so a holder is never left full after close.
      if (closed) {
        h.scratch = null;
      }
    }
    return s;
  }

  /**
   * Drops every thread's buffers (see the class comment); idempotent. Reads still work afterwards,
   * each with buffers of its own.
   */
  public void close() {
    closed = true;
    synchronized (holders) {
      for (ScratchHolder h : holders) {
        h.scratch = null;
      }
      holders.clear();
    }
  }

  /**
   * Reads up to {@code dst.remaining()} bytes of {@code replica} at {@code position} into {@code
   * dst}, advancing its position by the count returned.
   *
   * @param verify whether to verify checksums (ignored when the meta file has type NULL)
   * @param fileName the HDFS file, for error messages; null when unknown
   */
  public int read(
      ReplicaFiles replica, long position, ByteBuffer dst, boolean verify, String fileName)
      throws IOException {
    try {
      return readChecked(replica, position, dst, verify, fileName);
    } catch (InternalError e) {
      throw faultOrRethrow(replica, position, e);
    } catch (RuntimeException e) {
      throw faultOrRethrow(replica, position, e);
    }
  }

  private int readChecked(
      ReplicaFiles replica, long position, ByteBuffer dst, boolean verify, String fileName)
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
    MetaHeader header = replica.header();
    // An unverified pread into the caller's buffer (HBase's path: it checks its own checksums)
    // needs no scratch; look the thread's up only when mapped reads may need its view.
    Scratch s = mapped == null ? null : scratch();
    ByteBuffer map =
        s == null ? null : mapping(replica, position, want, header.bytesPerChecksum(), s);
    if (!verify || header.type() == MetaHeader.TYPE_NULL) {
      return readInto(replica, map, dst, position, want);
    }
    if (s == null) {
      s = scratch();
    }
    int bpc = header.bytesPerChecksum();
    long end = position + want;
    boolean startAligned = position % bpc == 0;
    boolean endAligned = end % bpc == 0 || end == length;
    if (startAligned && (endAligned || want >= bpc)) {
      if (!endAligned) {
        want -= (int) (end % bpc);
      }
      long maxBytes = (long) MAX_CHUNKS_PER_READ * bpc;
      if (want > maxBytes) {
        want = (int) maxBytes;
      }
      return readDirectVerified(replica, map, position, dst, want, s, fileName);
    }
    return readViaScratch(replica, map, position, dst, want, s, fileName);
  }

  /**
   * A view of the replica's block-file mapping to copy {@code [position, position + want)} (and the
   * chunks around it) from, or null when the read is a {@code pread}: no mapped-read policy, the
   * replica not hot yet, or its block file not mappable (counted as a fallback). The view is this
   * thread's ({@link Scratch#view}); its position and limit are the caller's.
   */
  private ByteBuffer mapping(ReplicaFiles replica, long position, int want, int bpc, Scratch s) {
    MappedReads policy = mapped;
    if (policy == null) {
      return null;
    }
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

  /**
   * As {@link #read(ReplicaFiles, long, ByteBuffer, boolean, String)}, into {@code buf[off, off +
   * len)}. A request that fits the scratch is read into it (verified there if asked) and copied
   * out, which is what {@code FileChannel} does for a heap buffer anyway, minus wrapping the array:
   * nothing is allocated. A larger one is read straight into the array.
   */
  public int read(
      ReplicaFiles replica,
      long position,
      byte[] buf,
      int off,
      int len,
      boolean verify,
      String fileName)
      throws IOException {
    try {
      return readChecked(replica, position, buf, off, len, verify, fileName);
    } catch (InternalError e) {
      throw faultOrRethrow(replica, position, e);
    } catch (RuntimeException e) {
      throw faultOrRethrow(replica, position, e);
    }
  }

  private int readChecked(
      ReplicaFiles replica,
      long position,
      byte[] buf,
      int off,
      int len,
      boolean verify,
      String fileName)
      throws IOException {
    Objects.checkFromIndexSize(off, len, buf.length);
    if (position < 0) {
      throw new IllegalArgumentException("negative block offset " + position);
    }
    long length = replica.length();
    if (position >= length) {
      return -1;
    }
    int want = (int) Math.min(len, length - position);
    if (want == 0) {
      return 0;
    }
    if (want > scratchBytes) {
      // One wrap per large read, negligible next to its copy; the scratch would split it up.
      return read(replica, position, ByteBuffer.wrap(buf, off, want), verify, fileName);
    }
    MetaHeader header = replica.header();
    Scratch s = scratch();
    ByteBuffer map = mapping(replica, position, want, header.bytesPerChecksum(), s);
    boolean unverified = !verify || header.type() == MetaHeader.TYPE_NULL;
    if (map != null && unverified) {
      // Straight from the mapping into the array: one copy, as a pread would make.
      positionView(map, position, want);
      try {
        map.get(buf, off, want);
      } catch (InternalError e) {
        throw mappedFault(replica, position, e);
      }
      return want;
    }
    ByteBuffer data = s.data(header.bytesPerChecksum());
    int n;
    if (unverified) {
      data.clear().limit(want);
      n = readFully(replica, map, data, position, want);
      if (n == 0) {
        throw shortData(replica, position, want, 0);
      }
      data.flip();
    } else {
      n = fillScratch(replica, map, position, want, s, fileName);
    }
    data.get(buf, off, n);
    return n;
  }

  private int readDirectVerified(
      ReplicaFiles replica,
      ByteBuffer map,
      long position,
      ByteBuffer dst,
      int want,
      Scratch s,
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
    ByteBuffer sums = readSums(replica, position, want, s);
    dst.position(start);
    try {
      verifyChunks(replica, dst, start, position, want, sums, s, fileName);
    } finally {
      dst.limit(limit);
    }
    dst.position(start + want);
    return want;
  }

  private int readViaScratch(
      ReplicaFiles replica,
      ByteBuffer map,
      long position,
      ByteBuffer dst,
      int want,
      Scratch s,
      String fileName)
      throws IOException {
    int n = fillScratch(replica, map, position, want, s, fileName);
    dst.put(s.data);
    return n;
  }

  /**
   * Reads and verifies the chunks covering {@code [position, position + want)}, as many as fit the
   * scratch, into the scratch; returns how many of the requested bytes it holds (at least one),
   * with the scratch's position and limit around them.
   */
  private int fillScratch(
      ReplicaFiles replica, ByteBuffer map, long position, int want, Scratch s, String fileName)
      throws IOException {
    MetaHeader header = replica.header();
    int bpc = header.bytesPerChecksum();
    long length = replica.length();
    long alignedStart = position - position % bpc;
    ByteBuffer data = s.data(bpc);
    int chunksFit = Math.min(data.capacity() / bpc, MAX_CHUNKS_PER_READ);
    long alignedEnd = Math.min(((position + want + bpc - 1) / bpc) * bpc, length);
    alignedEnd = Math.min(alignedEnd, alignedStart + (long) chunksFit * bpc);
    int span = (int) (alignedEnd - alignedStart);
    want = (int) Math.min(want, alignedEnd - position);
    data.clear().limit(span);
    int n = readFully(replica, map, data, alignedStart, span);
    if (n < span) {
      throw shortData(replica, alignedStart, span, n);
    }
    ByteBuffer sums = readSums(replica, alignedStart, span, s);
    verifyChunks(replica, data, 0, alignedStart, span, sums, s, fileName);
    int from = (int) (position - alignedStart);
    data.limit(from + want).position(from);
    return want;
  }

  /**
   * Locates the checksums of the chunks covering [position, position + len): in the mapped meta
   * file when there is one (no I/O), else pread into the scratch's sums buffer. Returns the buffer
   * holding them; the first is at index {@code s.sumsBase}.
   */
  private static ByteBuffer readSums(ReplicaFiles replica, long position, int len, Scratch s)
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
    ByteBuffer sums = s.sums;
    sums.clear().limit(bytes);
    int n = readFully(replica.meta(), sums, offset, bytes);
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
  private static void verifyChunks(
      ReplicaFiles replica,
      ByteBuffer buf,
      int from,
      long position,
      int len,
      ByteBuffer sums,
      Scratch s,
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
            + " bytes, or a disk error); turn scr.client.read.mapped.enabled off if this"
            + " recurs",
        e);
  }

  private static int readFully(FileChannel ch, ByteBuffer dst, long position, int want)
      throws IOException {
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

  private static IOException shortData(ReplicaFiles replica, long position, int want, int got) {
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

  /**
   * What a thread's thread-local holds: an empty shell once the reader is closed. Static, so it
   * keeps nothing of the reader alive.
   */
  private static final class ScratchHolder {
    /** Written by its thread, and emptied by {@link #close()} from another. */
    volatile Scratch scratch;
  }

  /** Per-thread buffers and checksum engines. */
  private static final class Scratch {
    private static final int VIEWS = 16;

    /** The buffer {@link #data(int)} returned last. */
    ByteBuffer data;

    final ByteBuffer sums = ByteBuffer.allocateDirect(MAX_CHUNKS_PER_READ * 4);

    /** Index of the first checksum in the buffer {@code readSums} returned last. */
    int sumsBase;

    /**
     * Views of the block-file mappings this thread read last, for mapped reads, so that a read
     * allocates nothing (a duplicate is 48 bytes): a small cache by identity hash, since random
     * reads move among replicas. It keeps up to {@value #VIEWS} mappings reachable (their address
     * ranges, zero pages once their replicas closed) until another mapping takes the entry or the
     * reader closes.
     */
    private final ByteBuffer[] views = new ByteBuffer[VIEWS];

    private final MappedByteBuffer[] viewOf = new MappedByteBuffer[VIEWS];

    /** This thread's view of {@code map}, its position and limit free for the caller to set. */
    ByteBuffer view(MappedByteBuffer map) {
      int i = System.identityHashCode(map) & (VIEWS - 1);
      if (viewOf[i] != map) {
        viewOf[i] = map;
        views[i] = map.duplicate();
      }
      return views[i];
    }

    final CRC32C crc32c = new CRC32C();
    final CRC32 crc32 = new CRC32();
    private final int size;

    Scratch(int size) {
      this.size = size;
    }

    ByteBuffer data(int bytesPerChecksum) {
      int needed = Math.max(size, bytesPerChecksum);
      if (data == null || data.capacity() < needed) {
        data = ByteBuffer.allocateDirect(needed);
      }
      return data;
    }
  }
}
