package io.scr.shm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A segment inside a {@link SlotPool}: the segment plus two bitmaps over its slots.
 *
 * <ul>
 *   <li>{@code free}: bit set = the slot is not held by anyone and the DataNode does not have it
 *       registered. Allocation claims a bit with one CAS; a thread that has told the DataNode about
 *       released slots sets their bits again (or hands the slots straight to waiting callers).
 *   <li>{@code pending}: bit set = a holder released the slot, the DataNode has not been told yet.
 *       Set by the releasing thread with one atomic OR; taken a word at a time (get-and-set 0) by
 *       whichever thread tells the DataNode: the maintenance thread, or a caller that found the
 *       pool otherwise empty. Taking is atomic, so each released slot is told exactly once.
 * </ul>
 *
 * <p>A slot is in use iff its bit is clear in both (slots whose release is being told, "in flight",
 * look in use here; the pool counts them separately). Both bitmaps are padded so that the words
 * allocators <em>write</em> (free) and the words releasers write (pending) never share a cache line
 * with each other or with neighbouring objects: an atomic OR on pending does not invalidate an
 * allocator's free line. The separation is only for writes. {@link #markPending} also
 * <em>reads</em> the free word (its misuse check: a slot whose free bit is set is not in use), so a
 * release does pull the free line into its core's cache in shared state, and the next claim on that
 * word pays one invalidation. That check is worth its cost (it turns a double release after the
 * slot was told and freed into an exception instead of a slot with two holders); what the padding
 * still saves is the write-write ping-pong between releasers and allocators.
 *
 * <p>State machine ({@link #state}): ACTIVE (in the pool's allocation array) → RETIRED (surplus,
 * out of the allocation array; still alive on the DataNode, so releases are still sent) or DEAD
 * (disconnected or a release failed; slots invalidated, releases not sent) → RETURNED (handed back
 * to the source, exactly once, when every bit is free again and nothing is pending). RETIRED may
 * also become DEAD. Transitions happen under the pool's segment lock ({@link SegmentTable}).
 *
 * <p>The one race that matters: an allocator that read an old allocation array may claim a bit of a
 * segment that is no longer ACTIVE. It checks the state <em>after</em> its CAS and puts the bit
 * back if so, without touching the segment's memory; because a non-ACTIVE segment is returned only
 * when all its bits are free, a claimed bit keeps the segment mapped. See {@link #tryClaim}.
 */
final class PooledSegment {
  static final int ACTIVE = 0;
  static final int RETIRED = 1;
  static final int DEAD = 2;
  static final int RETURNED = 3;

  private static final VarHandle WORDS = MethodHandles.arrayElementVarHandle(long[].class);

  /** 64 bytes of padding on each side of the bitmap words. */
  private static final int PAD = 8;

  final SlotPool pool;
  final Segment segment;
  final int slotCount;
  private final int wordCount;
  private final long lastWordMask;
  private final long[] free;
  private final long[] pending;
  private final AtomicInteger state = new AtomicInteger(ACTIVE);

  /** When the maintenance thread first saw pending releases here; maintenance thread only. */
  long pendingSinceNanos = SlotPool.NOT_PENDING;

  PooledSegment(SlotPool pool, Segment segment) {
    this.pool = pool;
    this.segment = segment;
    this.slotCount = segment.slotCount();
    this.wordCount = (slotCount + 63) >>> 6;
    int rem = slotCount & 63;
    this.lastWordMask = rem == 0 ? -1L : (1L << rem) - 1;
    this.free = new long[wordCount + 2 * PAD];
    this.pending = new long[wordCount + 2 * PAD];
    for (int w = 0; w < wordCount; w++) {
      free[PAD + w] = mask(w);
    }
  }

  private long mask(int w) {
    return w == wordCount - 1 ? lastWordMask : -1L;
  }

  int state() {
    return state.get();
  }

  boolean transition(int from, int to) {
    return state.compareAndSet(from, to);
  }

  /**
   * Claims a free slot and initialises it, or returns null when this segment has none or is not
   * ACTIVE. Lock-free: one CAS per attempt, then one volatile store into the slot.
   *
   * <p>Initialisation is one volatile store of {@link Slot#VALID_FLAG}: the same final word as
   * stock's {@code clear()} then {@code makeValid()}, because nobody else writes a free slot's word
   * (the DataNode touches it again only after registering it for our next request). The store is
   * volatile, not release, so that it is ordered before the state re-check below: a {@code kill}
   * that flips the state and then clears VALID on every slot either sees our VALID or is seen by
   * our re-check.
   */
  Slot tryClaim() {
    for (int w = 0; w < wordCount; w++) {
      int i = PAD + w;
      long word = (long) WORDS.getVolatile(free, i);
      while (word != 0) {
        long bit = word & -word;
        if (WORDS.compareAndSet(free, i, word, word ^ bit)) {
          if (word == bit) {
            pool.onFreeWordExhausted();
          }
          return initClaimed(w, bit);
        }
        word = (long) WORDS.getVolatile(free, i);
      }
    }
    return null;
  }

  /**
   * Makes a slot whose bit this thread owns (claimed from {@code free}, or taken from {@code
   * pending} and told to the DataNode) ready for a new holder: VALID set, everything else clear.
   * Returns null and puts the bit into {@code free} when the segment is not ACTIVE.
   */
  Slot initClaimed(int w, long bit) {
    if (state.get() != ACTIVE) {
      // Not ours to hand out; put it back without touching the segment's memory.
      addFree(w, bit);
      return null;
    }
    Slot slot = segment.slot((w << 6) + Long.numberOfTrailingZeros(bit));
    slot.storeVolatile(Slot.VALID_FLAG);
    if (state.get() != ACTIVE) {
      // Died while we initialised it: invalidateAll may have run before our store.
      slot.makeInvalid();
      addFree(w, bit);
      return null;
    }
    return slot;
  }

  /**
   * Marks {@code index} released (pending remote release). Returns true when it is the first
   * pending bit of its word, i.e. nobody is about to take that word.
   *
   * @throws IllegalStateException when the slot is not in use (released twice, or never allocated);
   *     checked, not guaranteed, since a racing release can slip past
   */
  boolean markPending(int index) {
    int i = PAD + (index >>> 6);
    long bit = 1L << (index & 63);
    if (((long) WORDS.getVolatile(free, i) & bit) != 0) {
      throw new IllegalStateException("slot " + segment.slot(index).id() + " is not in use");
    }
    long prev = (long) WORDS.getAndBitwiseOr(pending, i, bit);
    if ((prev & bit) != 0) {
      throw new IllegalStateException("slot " + segment.slot(index).id() + " released twice");
    }
    return prev == 0;
  }

  /** Puts a slot straight back into the free bitmap (never registered at the peer). */
  void freeDirectly(int index) {
    int i = PAD + (index >>> 6);
    long bit = 1L << (index & 63);
    long prev = (long) WORDS.getAndBitwiseOr(free, i, bit);
    if ((prev & bit) != 0) {
      throw new IllegalStateException("slot " + segment.slot(index).id() + " is not in use");
    }
  }

  int wordCount() {
    return wordCount;
  }

  /** Whether word {@code w} has pending bits (volatile load; no write, so no cache-line steal). */
  boolean hasPending(int w) {
    return (long) WORDS.getVolatile(pending, PAD + w) != 0;
  }

  /** Whether any word has pending bits (volatile loads only). */
  boolean hasPending() {
    for (int w = 0; w < wordCount; w++) {
      if ((long) WORDS.getVolatile(pending, PAD + w) != 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * Takes all pending bits of word {@code w}; the caller must tell the DataNode, then free them.
   */
  long takePending(int w) {
    return (long) WORDS.getAndSet(pending, PAD + w, 0L);
  }

  void addFree(int w, long bits) {
    WORDS.getAndBitwiseOr(free, PAD + w, bits);
  }

  int freeCount() {
    int n = 0;
    for (int w = 0; w < wordCount; w++) {
      n += Long.bitCount((long) WORDS.getVolatile(free, PAD + w));
    }
    return n;
  }

  int pendingCount() {
    int n = 0;
    for (int w = 0; w < wordCount; w++) {
      n += Long.bitCount((long) WORDS.getVolatile(pending, PAD + w));
    }
    return n;
  }

  /**
   * Slots held by someone or in flight: neither free nor pending (a transient claim counts too).
   */
  int notFreeNorPendingCount() {
    return slotCount - freeCount() - pendingCount();
  }

  /** Every slot free and nothing pending: the segment may be returned once it is not ACTIVE. */
  boolean isEmpty() {
    for (int w = 0; w < wordCount; w++) {
      if ((long) WORDS.getVolatile(free, PAD + w) != mask(w)
          || (long) WORDS.getVolatile(pending, PAD + w) != 0) {
        return false;
      }
    }
    return true;
  }

  @Override
  public String toString() {
    return segment.id() + "[state=" + state.get() + ", free=" + freeCount() + "]";
  }
}
