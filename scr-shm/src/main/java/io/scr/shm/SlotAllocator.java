package io.scr.shm;

/**
 * Where slots come from and where freed slots go: the lock-free first-fit claim over the table's
 * ACTIVE segments, and the rule that a slot freed while callers wait goes to the oldest of them
 * before it reaches a free bitmap.
 *
 * <p><b>Concurrency contract.</b> Lock-free, any thread. A claim is one CAS on a free-bitmap word
 * ({@link PooledSegment#tryClaim}); a stale allocation array is harmless (the claim re-checks the
 * segment's state). The scan hint ({@link #allocHint}) is a plain field: racy reads and writes only
 * move where the next scan starts, and it is written only when it changes, so the fast path writes
 * no shared line. Freed slots are offered to the {@link HandOffQueue} first; what no waiter takes
 * goes to the bitmap. A caller that arrives after slots went to the bitmap can claim them before a
 * queued caller, and the pool's waiters re-check the bitmap themselves (see {@link SlotPool}): so
 * waiters are served in arrival order among themselves, but not before every newcomer.
 */
final class SlotAllocator {
  private final SegmentTable table;
  private final HandOffQueue<Slot> waiters;

  /**
   * Index in the allocation array where a scan starts: the lowest segment that may have free slots
   * (allocation packs low, so surplus segments at the end empty out and can be returned).
   */
  private int allocHint;

  SlotAllocator(SegmentTable table, HandOffQueue<Slot> waiters) {
    this.table = table;
    this.waiters = waiters;
  }

  /** One first-fit scan from the hint, wrapping around; null when no active segment has a slot. */
  Slot tryAllocate() {
    PooledSegment[] segments = table.active();
    int n = segments.length;
    int start = allocHint;
    if (start >= n) {
      start = 0;
    }
    int i = start;
    for (int k = 0; k < n; k++) {
      Slot slot = segments[i].tryClaim();
      if (slot != null) {
        if (i != start) {
          allocHint = i;
        }
        return slot;
      }
      if (++i == n) {
        i = 0;
      }
    }
    return null;
  }

  /** {@code entry} has free slots again: start the next scan there if it is lower. */
  private void lowerHint(PooledSegment entry) {
    PooledSegment[] segments = table.active();
    int hint = allocHint;
    for (int i = 0; i < segments.length && i < hint; i++) {
      if (segments[i] == entry) {
        allocHint = i;
        return;
      }
    }
  }

  /**
   * Frees {@code bits} of word {@code w} of {@code entry}, which this thread owns and the DataNode
   * no longer has registered (or which belong to a dead segment): straight to waiting callers,
   * oldest first, while the segment is ACTIVE; the rest into the free bitmap.
   */
  void free(PooledSegment entry, int w, long bits) {
    while (bits != 0 && waiters.hasWaiters() && entry.state() == PooledSegment.ACTIVE) {
      long bit = bits & -bits;
      bits ^= bit;
      Slot slot = entry.initClaimed(w, bit);
      if (slot == null) {
        break; // died: initClaimed freed the bit, the rest follows below
      }
      if (!waiters.offer(slot)) {
        slot.makeInvalid();
        bits |= bit;
        break;
      }
    }
    if (bits != 0) {
      entry.addFree(w, bits);
      lowerHint(entry);
    }
    // A caller may have queued after we looked: it saw no free slot, so it must see our count.
    if (waiters.hasWaiters()) {
      serveWaitersFromBitmap();
    }
  }

  /**
   * Moves slots from the free bitmap to waiters, oldest first, while both exist. Stops at the first
   * counted waiter it cannot find (one that is just leaving or being served): a waiter re-checks on
   * its own when it wakes.
   */
  void serveWaitersFromBitmap() {
    while (waiters.hasWaiters()) {
      Slot slot = tryAllocate();
      if (slot == null) {
        return;
      }
      if (!waiters.offer(slot)) {
        putBack(slot);
        return;
      }
    }
  }

  /** A slot initialised for someone who no longer needs it: to the next waiter or the bitmap. */
  void passOn(Slot slot) {
    if (!waiters.offer(slot)) {
      putBack(slot);
    }
  }

  /** A claimed slot nobody takes: VALID cleared, bit back in the free bitmap. */
  static void putBack(Slot slot) {
    slot.makeInvalid();
    slot.segment().poolEntry.freeDirectly(slot.index());
  }
}
