package io.scr.core.internal.read;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The open files of one local replica: the block data and its meta file (checksums), with the
 * parsed meta header and the replica's length when opened.
 *
 * <p>Verified reads find their checksums in memory when they can: a meta file of at most {@value
 * #HEAP_SUMS_MAX_BYTES} bytes (blocks up to about 512 KiB at 512 bytes per checksum) is read whole
 * into the heap with the one {@code pread} that reads its header, a larger one is mapped read-only
 * when {@link ChecksumMappings} allows it. Either way the meta channel is then closed at once, so
 * the replica holds one fd. Otherwise the meta channel stays open and checksums are pread. A small
 * meta file is copied rather than mapped because a mapping costs an {@code mmap} at open and a page
 * replacement at close, both serialized on the process's memory-map lock (mapping them put
 * milliseconds into the p99 of replica opens at 8 threads), and pins at least a page anyway: the
 * copy is never larger.
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
 *
 * <p><b>The block file mapping (zero-copy reads).</b> {@link #mapData} maps the block file
 * read-only on first use, charged to a {@link MappingBudget}, and hands out read-only slices of it.
 * A slice is valid while the lease it was taken under is open: the cache closes this replica only
 * after its last lease, so {@link #close()} releases the mapping only when no slice lent out can
 * still be in use, and releases it the way meta mappings are released ({@link
 * ChecksumMappings#zeroPages}): a slice read after that (a caller that never gave its buffer back)
 * reads zeros, and the address range is unmapped by the garbage collector with the last slice.
 * Should the DataNode truncate the block file under a live mapping, a read of a page past the new
 * end raises {@code InternalError} in the reading thread (the JVM turns the {@code SIGBUS} into
 * it); {@link #mapData} checks the file still covers the range before lending it, so such a read is
 * refused with an {@code EOFException} instead.
 *
 * <p><b>Mapped reads</b> ({@link MappedReads}, off unless configured) copy from the same one
 * mapping, made by {@link #mapForReads} on a hot replica's read or by {@link #mapData}, whichever
 * comes first, and released the same way. They check nothing per read (that {@code fstat} is the
 * syscall they save): a truncation under them is the residual risk {@link MappedReads} describes.
 */
public final class ReplicaFiles implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(ReplicaFiles.class);

  /** Meta files up to this size are read into the heap at open instead of mapped (one page). */
  static final int HEAP_SUMS_MAX_BYTES = 4096;

  private final FileChannel data;
  private final FileChannel meta;
  private final MetaHeader header;

  /**
   * The header's chunk size and checksums (null for type NULL: nothing to verify), held here so
   * that a read finds them in the object it reads.
   */
  private final int bytesPerChecksum;

  private final ChunkChecksums checksums;

  private final long length;
  private final String blockName;

  /**
   * The whole meta file in memory (a heap copy or {@link #sumsMapping}), or null (checksums are
   * pread from {@link #meta}).
   */
  private final ByteBuffer sums;

  /** The meta file's mapping when {@link #sums} is one (released at close), else null. */
  private final MappedByteBuffer sumsMapping;

  private volatile boolean closed;

  /**
   * Whether the replica was opened while its block was being written ({@link #openGrowing}): its
   * files may still grow, its last checksum may be rewritten in place, so checksums are always
   * pread and the block file is never mapped.
   */
  private final boolean growing;

  /**
   * The block file mapped read-only for zero-copy and mapped reads; null until {@link #mapData} or
   * {@link #mapForReads} maps it. Written once, under this object's monitor; read without it by
   * {@link #dataMapping()} (volatile), which is how a mapped read finds it without a lock.
   */
  private volatile MappedByteBuffer dataMap;

  /**
   * Reads while the block file was not mapped, counted for {@link MappedReads} only: a plain int,
   * racy on purpose (a lost increment delays a mapping by a read; no lock or atomic on the read
   * path).
   */
  private int unmappedReads;

  /** The {@link #unmappedReads} count at which a refused mapping is asked for again (racy too). */
  private int nextMapAttempt;

  /** The budget {@link #dataMap} is charged to. */
  @GuardedBy("this")
  private MappingBudget dataMapBudget;

  /** Set when mapping the block file failed: not tried again for this replica. */
  @GuardedBy("this")
  private boolean dataMapFailed;

  /**
   * Takes ownership of both channels; checksums will be pread.
   *
   * @param blockName names the block in errors (e.g. {@code BP-1:blk_1073741825_1001})
   */
  public ReplicaFiles(
      FileChannel data, FileChannel meta, MetaHeader header, long length, String blockName) {
    this(data, meta, header, length, blockName, null, null, false);
  }

  private ReplicaFiles(
      FileChannel data,
      FileChannel meta,
      MetaHeader header,
      long length,
      String blockName,
      ByteBuffer sums,
      MappedByteBuffer sumsMapping,
      boolean growing) {
    this.growing = growing;
    this.data = data;
    this.meta = meta;
    this.header = header;
    this.bytesPerChecksum = header.bytesPerChecksum();
    this.checksums =
        header.type() == MetaHeader.TYPE_NULL
            ? null
            : ChunkChecksums.of(header.type(), header.bytesPerChecksum());
    this.length = length;
    this.blockName = blockName;
    this.sums = sums;
    this.sumsMapping = sumsMapping;
  }

  /**
   * Opens the replica from its two channels: reads the meta header and the data length, and keeps
   * the checksums in memory if it can (closing the meta channel). On failure both channels are
   * closed.
   */
  public static ReplicaFiles open(FileChannel data, FileChannel meta, String blockName)
      throws IOException {
    return open(data, meta, blockName, true);
  }

  /**
   * As {@link #open(FileChannel, FileChannel, String)}; {@code sumsInMemory} false never copies nor
   * maps the checksums (they are pread).
   */
  static ReplicaFiles open(
      FileChannel data, FileChannel meta, String blockName, boolean sumsInMemory)
      throws IOException {
    return open(data, meta, blockName, sumsInMemory, true);
  }

  /**
   * As {@link #open(FileChannel, FileChannel, String, boolean)}; {@code uninterruptible} false
   * leaves the channels interruptible even where the JVM could make them immune (what a JVM without
   * {@value UninterruptibleChannels#FLAG} does).
   */
  static ReplicaFiles open(
      FileChannel data,
      FileChannel meta,
      String blockName,
      boolean sumsInMemory,
      boolean uninterruptible)
      throws IOException {
    MappedByteBuffer mapped = null;
    try {
      if (uninterruptible) {
        UninterruptibleChannels.apply(data);
        UninterruptibleChannels.apply(meta);
      }
      // One pread reads the header and, for a small meta file, every checksum: one byte more than
      // the copy limit tells a small file from a large one. The data file's length says how long
      // the meta file is, so a read that returned all of it is the last: asking again only to be
      // told "end of file" was a second pread on every open.
      ByteBuffer head = ByteBuffer.allocate(HEAP_SUMS_MAX_BYTES + 1);
      readUntil(meta, head, MetaHeader.HEADER_BYTES);
      MetaHeader header = MetaHeader.parse(ByteBuffer.wrap(head.array(), 0, head.position()));
      long dataLength = data.size();
      int metaRead = readUntil(meta, head, metaLength(header, dataLength));
      ByteBuffer sums = null;
      if (sumsInMemory && header.type() != MetaHeader.TYPE_NULL) {
        if (metaRead <= HEAP_SUMS_MAX_BYTES) {
          sums = ByteBuffer.wrap(Arrays.copyOf(head.array(), metaRead));
        } else {
          mapped = ChecksumMappings.map(meta, meta.size());
          sums = mapped;
        }
      }
      if (sums != null) {
        meta.close(); // the copy or the mapping holds the checksums; one fd less per replica
      }
      return new ReplicaFiles(data, meta, header, dataLength, blockName, sums, mapped, false);
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

  /**
   * Opens the replica of a block being written (an RBW replica) from its two channels: reads only
   * the meta header and keeps both channels, because the block and meta files still grow and the
   * meta file's last checksum is rewritten in place while the last chunk fills. Checksums are then
   * always pread, the block file is never mapped, and {@link #length()} is the block file's size at
   * each call (one {@code fstat}). Reads of such a replica are bounded by the caller's visible
   * length ({@link TailBlockReader}). On failure both channels are closed.
   */
  public static ReplicaFiles openGrowing(FileChannel data, FileChannel meta, String blockName)
      throws IOException {
    try {
      UninterruptibleChannels.apply(data);
      UninterruptibleChannels.apply(meta);
      ByteBuffer head = ByteBuffer.allocate(MetaHeader.HEADER_BYTES);
      readUntil(meta, head, MetaHeader.HEADER_BYTES);
      MetaHeader header = MetaHeader.parse(ByteBuffer.wrap(head.array(), 0, head.position()));
      return new ReplicaFiles(data, meta, header, data.size(), blockName, null, null, true);
    } catch (IOException | RuntimeException e) {
      try {
        data.close();
      } finally {
        meta.close();
      }
      throw e;
    }
  }

  /**
   * Reads on from {@code buf}'s position (its file offset) until it holds {@code target} bytes, is
   * full or the file ends; returns the bytes it holds.
   */
  private static int readUntil(FileChannel ch, ByteBuffer buf, long target) throws IOException {
    while (buf.position() < target && buf.hasRemaining()) {
      if (ch.read(buf, buf.position()) < 0) {
        break;
      }
    }
    return buf.position();
  }

  /** The length of a complete meta file for {@code dataLength} bytes of data. */
  private static long metaLength(MetaHeader header, long dataLength) {
    long chunks = (dataLength + header.bytesPerChecksum() - 1) / header.bytesPerChecksum();
    return header.checksumOffset(chunks);
  }

  /** The block data channel. */
  public FileChannel data() {
    return data;
  }

  /**
   * The meta file channel (closed when the checksums are in memory: see {@link #sumsInMemory()}).
   */
  public FileChannel meta() {
    return meta;
  }

  /**
   * The whole meta file in memory, read-only for its users (big-endian checksums at {@link
   * MetaHeader#checksumOffset}): a heap copy of a small one or a mapping of a large one; null when
   * checksums are pread from {@link #meta()}.
   */
  ByteBuffer sumsInMemory() {
    return sums;
  }

  /** The meta file's mapping, or null when it is not mapped (copied, or pread). */
  MappedByteBuffer mappedSums() {
    return sumsMapping;
  }

  /**
   * Touches each page of the meta file's mapping (up to {@link #PREFAULT_MAX_BYTES}) so that it is
   * in the process's page tables before the replica's first reads: a prefetch on open pays the
   * minor faults off the reading thread (one per 16 pages with Linux's fault-around, about 5 µs
   * each on the benchmark VM, where the first read of every prefetched 1 MiB block took one). No-op
   * when the checksums are a heap copy or pread. A mapping that faults (its file truncated under
   * it) is left to the reads, which handle it. Returns how many pages were touched.
   */
  public int prefaultChecksums() {
    MappedByteBuffer m = sumsMapping;
    if (m == null) {
      return 0;
    }
    int end = Math.min(m.capacity(), PREFAULT_MAX_BYTES);
    int pages = 0;
    int sum = 0;
    try {
      for (int i = 0; i < end; i += PAGE) {
        sum += m.get(i);
        pages++;
      }
    } catch (InternalError | RuntimeException e) {
      LOG.debug("Prefaulting the checksums of {} stopped after {} pages", blockName, pages, e);
    }
    prefaultSink = sum;
    return pages;
  }

  /** Pages are touched one by one at this stride (the smallest page size Linux uses). */
  private static final int PAGE = 4096;

  /** At most this much of a meta mapping is prefaulted: 256 MiB of CRC32C over 512-byte chunks. */
  static final int PREFAULT_MAX_BYTES = 2 << 20;

  /** Where {@link #prefaultChecksums} leaves what it read, so that the reads are not elided. */
  @SuppressWarnings("unused")
  private static volatile int prefaultSink;

  /** The meta header. */
  public MetaHeader header() {
    return header;
  }

  /** The header's bytes per checksum (the chunk size). */
  int bytesPerChecksum() {
    return bytesPerChecksum;
  }

  /** The header's checksums and their verification, or null when its type is NULL. */
  ChunkChecksums checksums() {
    return checksums;
  }

  /**
   * Bytes in the data file when opened; for a replica opened while being written ({@link
   * #isGrowing()}), the block file's size now (an {@code fstat}; the size when opened if that
   * fails, e.g. on a closed channel, which the read then meets).
   */
  public long length() {
    if (growing) {
      try {
        return data.size();
      } catch (IOException e) {
        return length;
      }
    }
    return length;
  }

  /** Whether the replica was opened while its block was being written ({@link #openGrowing}). */
  public boolean isGrowing() {
    return growing;
  }

  /** The block, for error messages. */
  public String blockName() {
    return blockName;
  }

  /** File descriptors held: 1 when the checksums are in memory, else 2. */
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

  /**
   * A read-only slice of the mapped block file: {@code length} bytes at {@code offset}, position 0,
   * valid while the caller's lease on this replica is open (see the class javadoc). The block file
   * is mapped on the first call, whole (up to 2 GiB), and charged to {@code budget}; later calls
   * reuse the mapping and allocate only the slice.
   *
   * @return the slice, or null when the block file cannot be mapped: mapping is unavailable in this
   *     JVM ({@link ChecksumMappings#isAvailable()}), the budget is full, the range lies past 2
   *     GiB, the replica is closed, or mapping failed once before
   * @throws EOFException if the block file no longer covers the range (truncated under the replica)
   * @throws IOException if its size cannot be read (the channel was closed)
   */
  public ByteBuffer mapData(long offset, int length, MappingBudget budget) throws IOException {
    if (growing) {
      return null; // a mapping of a growing file's size now would never cover what it grows by
    }
    if (offset < 0 || length <= 0 || offset + length > this.length) {
      throw new IllegalArgumentException(
          "range [" + offset + ", +" + length + ") is outside " + blockName + " of " + this.length);
    }
    MappedByteBuffer map = dataMapping(budget);
    if (map == null || offset + length > map.capacity()) {
      return null;
    }
    // A page past a truncated file's end faults (SIGBUS) when touched: lend nothing it no longer
    // holds. One fstat; a truncation after this check is met by the reader (see the class javadoc).
    long size = data.size();
    if (size < offset + length) {
      throw new EOFException(
          "the block file of "
              + blockName
              + " was truncated to "
              + size
              + " bytes under its replica (opened with "
              + this.length
              + "); not reading ["
              + offset
              + ", +"
              + length
              + ") from its mapping");
    }
    ByteBuffer view = map.duplicate();
    view.limit((int) (offset + length)).position((int) offset);
    return view.slice().asReadOnlyBuffer();
  }

  /**
   * The block-file mapping for a mapped read, or null while it is not mapped or after {@link
   * #close()} (the read then preads, and a closed channel says the replica is closed). No lock.
   */
  MappedByteBuffer dataMapping() {
    MappedByteBuffer map = dataMap;
    return closed ? null : map;
  }

  /** Counts a read made while the block file was not mapped; returns the count (approximate). */
  int noteUnmappedRead() {
    int n = unmappedReads + 1;
    unmappedReads = n;
    return n;
  }

  /**
   * Maps the block file for {@link MappedReads}, charged to {@code budget}, unless a refusal is
   * recent: returns the mapping (made now or before), or null when it was refused, failed or is
   * unavailable, after which it is asked for again only {@value MappedReads#RETRY_INTERVAL} reads
   * later.
   *
   * @param reads the count {@link #noteUnmappedRead} returned for this read
   */
  MappedByteBuffer mapForReads(MappingBudget budget, int reads) {
    if (reads < nextMapAttempt) {
      return null;
    }
    MappedByteBuffer map = dataMapping(budget);
    if (map == null) {
      nextMapAttempt = reads + MappedReads.RETRY_INTERVAL;
    }
    return map;
  }

  private synchronized MappedByteBuffer dataMapping(MappingBudget budget) {
    if (growing) {
      return null;
    }
    if (dataMap != null || closed || dataMapFailed || !ChecksumMappings.isAvailable()) {
      return closed ? null : dataMap;
    }
    long size = Math.min(length, Integer.MAX_VALUE);
    if (!budget.tryAcquire(size)) {
      return null;
    }
    try {
      dataMap = data.map(FileChannel.MapMode.READ_ONLY, 0, size);
      dataMapBudget = budget;
      return dataMap;
    } catch (IOException | RuntimeException e) {
      budget.release(size);
      dataMapFailed = true;
      LOG.debug("mapping the block file of {} failed; it is read by copy", blockName, e);
      return null;
    }
  }

  /** Whether the block file is mapped (for tests and diagnostics). */
  synchronized boolean isDataMapped() {
    return dataMap != null;
  }

  /**
   * Closes both channels and releases the meta and block file mappings; idempotent. The cache calls
   * it after the replica's last lease, so no slice lent by {@link #mapData} is still in use.
   */
  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    MappedByteBuffer dataMap = this.dataMap;
    try {
      data.close();
    } finally {
      try {
        meta.close();
      } finally {
        try {
          if (sumsMapping != null) {
            ChecksumMappings.release(sumsMapping);
          }
        } finally {
          if (dataMap != null) {
            ChecksumMappings.zeroPages(dataMap, "the block file of " + blockName);
            dataMapBudget.release(dataMap.capacity());
          }
        }
      }
    }
  }
}
