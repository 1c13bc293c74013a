package io.scr.shm;

/**
 * Where freed slots go: the rule that a slot freed while callers wait goes to the oldest of them
 * before it reaches a free bitmap. (Where slots come from, the first-fit claim, is {@link
 * SegmentTable#tryAllocate}: the allocation fast path reads one object.)
 *
 * <p><b>Concurrency contract.</b> Lock-free, any thread. Freed slots are offered to the {@link
 * HandOffQueue} first; what no waiter takes goes to the bitmap. A caller that arrives after slots
 * went to the bitmap can claim them before a queued caller, and the pool's waiters re-check the
 * bitmap themselves (see {@link SlotPool}): so waiters are served in arrival order among
 * themselves, but not before every newcomer.
 */
final class SlotAllocator {
  private final SegmentTable table;
  private final HandOffQueue<Slot> waiters;

  SlotAllocator(SegmentTable table, HandOffQueue<Slot> waiters) {
    this.table = table;
    this.waiters = waiters;
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
      table.lowerHint(entry);
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
      Slot slot = table.tryAllocate();
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
