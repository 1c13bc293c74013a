package io.scr.shm;

import io.scr.shm.internal.SharedWords;
import java.lang.ref.Reference;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One 64-byte slot of a {@link Segment}: word 0 holds the flags and anchor count that the DataNode
 * and the client share, exactly as HDFS {@code ShortCircuitShm.Slot}; bytes 8..63 are padding (so
 * two slots never share a cache line) and stay zero.
 *
 * <pre>
 * word 0 (native byte order, 8-byte aligned):
 *   bit 63      VALID       the DataNode still vouches for the replica behind this slot
 *   bit 62      ANCHORABLE  the replica is mlocked; readers may anchor and skip checksums
 *   bits 0..30  anchor count (mask 0x7fffffff)
 *   bits 31..61 unused, 0
 * </pre>
 *
 * <p>Memory ordering: every accessor is sequentially consistent (volatile load, volatile store or
 * compare-and-set), as Hadoop's {@code getLongVolatile}/{@code compareAndSwapLong}; the other
 * process sees each change as one atomic 64-bit write. Read-modify-write operations are CAS loops,
 * so they are lock-free and safe against the other process writing the same word.
 *
 * <p>Thread-safety: safe for any number of threads in either process. Lifetime: a slot is a view
 * into its segment's mapping; after the segment is closed it reads as zero (invalid) and must not
 * be used for anything else, but touching it cannot crash the JVM; see {@link Segment}. A {@code
 * Slot} handed out by {@link SlotPool#allocate()} is the caller's until it is released, and must
 * not be used after that.
 */
public final class Slot {
  /** Bit 63: the DataNode still vouches for the replica. */
  public static final long VALID_FLAG = 1L << 63;

  /** Bit 62: the replica is cached (mlocked), so the slot may be anchored. */
  public static final long ANCHORABLE_FLAG = 1L << 62;

  /** Bits 0..30: the number of readers anchoring the slot. */
  public static final long ANCHOR_COUNT_MASK = 0x7fffffffL;

  /** Size of one slot in bytes. */
  public static final int BYTES_PER_SLOT = 64;

  private final Segment segment;

  /**
   * The segment's closed flag ({@link Segment#isClosed()}), held here so that the validity check a
   * cached replica makes on every hit reads it without a call into the segment.
   */
  private final AtomicBoolean segmentClosed;

  private final SharedWords words;
  private final int offset;
  private final SlotId id;

  Slot(Segment segment, SharedWords words, int index) {
    this.segment = segment;
    this.segmentClosed = segment.closedFlag();
    this.words = words;
    this.offset = index * BYTES_PER_SLOT;
    this.id = SlotId.of(segment.id(), index);
  }

  /** This slot's id (segment id and index). */
  public SlotId id() {
    return id;
  }

  /** The index in the segment. */
  public int index() {
    return id.index();
  }

  /** The segment this slot belongs to. */
  public Segment segment() {
    return segment;
  }

  // Every access ends with a reachability fence on this slot: the slot keeps its segment reachable,
  // and the segment's address range is unmapped only once the segment is unreachable, so the range
  // cannot be unmapped while an access to it is under way (the JIT may otherwise treat the slot as
  // dead as soon as it has read the address).

  /** Word 0, volatile load. */
  public long loadVolatile() {
    long word = words.loadVolatile(offset);
    Reference.reachabilityFence(this);
    return word;
  }

  /** Word 0, volatile store (overwrites flags and count; only the slot's owner may do this). */
  public void storeVolatile(long word) {
    words.storeVolatile(offset, word);
    Reference.reachabilityFence(this);
  }

  /** Word 0, compare-and-set with volatile semantics. */
  public boolean compareAndSet(long expected, long update) {
    boolean set = words.compareAndSetLong(offset, expected, update);
    Reference.reachabilityFence(this);
    return set;
  }

  /** Volatile load of VALID. A reader holding a replica checks this to learn it went stale. */
  public boolean isValid() {
    // A closed segment's slots read as zero (invalid) anyway; this says so without the read, and
    // holds even if the segment's pages could not be replaced on close (see Segment#close()).
    if (segmentClosed.get()) {
      return false;
    }
    return (loadVolatile() & VALID_FLAG) != 0;
  }

  /** Volatile load of ANCHORABLE. */
  public boolean isAnchorable() {
    return (loadVolatile() & ANCHORABLE_FLAG) != 0;
  }

  /** Volatile load of the anchor count. */
  public int anchorCount() {
    return (int) (loadVolatile() & ANCHOR_COUNT_MASK);
  }

  /**
   * VALID is set and the anchor count is nonzero (one volatile load), as stock {@code isAnchored}.
   */
  public boolean isAnchored() {
    long word = loadVolatile();
    return (word & VALID_FLAG) != 0 && (word & ANCHOR_COUNT_MASK) != 0;
  }

  /** Sets VALID (CAS loop). */
  public void makeValid() {
    setFlag(VALID_FLAG);
  }

  /** Clears VALID (CAS loop); holders see their replica as stale from now on. */
  public void makeInvalid() {
    clearFlag(VALID_FLAG);
  }

  /** Sets ANCHORABLE (CAS loop). */
  public void makeAnchorable() {
    setFlag(ANCHORABLE_FLAG);
  }

  /** Clears ANCHORABLE (CAS loop); existing anchors stay until released. */
  public void makeUnanchorable() {
    clearFlag(ANCHORABLE_FLAG);
  }

  /**
   * Adds one anchor if VALID and ANCHORABLE are both set and the count is below its maximum (CAS
   * loop), exactly as stock {@code addAnchor}; returns false otherwise and changes nothing.
   */
  public boolean tryAnchor() {
    while (true) {
      long prev = loadVolatile();
      if ((prev & VALID_FLAG) == 0
          || (prev & ANCHORABLE_FLAG) == 0
          || (prev & ANCHOR_COUNT_MASK) == ANCHOR_COUNT_MASK) {
        return false;
      }
      if (compareAndSet(prev, prev + 1)) {
        return true;
      }
    }
  }

  /**
   * Removes one anchor (CAS loop), as stock {@code removeAnchor}.
   *
   * @throws IllegalStateException if the count is already zero (an unbalanced release is a bug)
   */
  public void releaseAnchor() {
    while (true) {
      long prev = loadVolatile();
      if ((prev & ANCHOR_COUNT_MASK) == 0) {
        throw new IllegalStateException("slot " + id + " is not anchored");
      }
      if (compareAndSet(prev, prev - 1)) {
        return;
      }
    }
  }

  private void setFlag(long flag) {
    while (true) {
      long prev = loadVolatile();
      if ((prev & flag) != 0 || compareAndSet(prev, prev | flag)) {
        return;
      }
    }
  }

  private void clearFlag(long flag) {
    while (true) {
      long prev = loadVolatile();
      if ((prev & flag) == 0 || compareAndSet(prev, prev & ~flag)) {
        return;
      }
    }
  }

  @Override
  public String toString() {
    if (segment.isClosed()) {
      return "Slot{" + id + ", segment closed}";
    }
    return "Slot{" + id + ", word=0x" + Long.toHexString(loadVolatile()) + "}";
  }
}
