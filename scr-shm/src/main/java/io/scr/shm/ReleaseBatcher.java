package io.scr.shm;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns pending releases into free slots: takes pending bits, tells the DataNode through the {@link
 * SlotReleaser} in calls of at most the maximum batch, then frees them through the {@link
 * SlotAllocator} (waiters first). Pending → in flight → free; a slot is reusable only after the
 * releaser call that carried it returned.
 *
 * <p><b>Concurrency contract.</b> Lock-free, called from several threads at once: the maintenance
 * thread (a word at a time, {@link #releasePending}) and allocating callers that found no free slot
 * ({@link #releaseOnCaller}, {@link #releaseForWaiters}: every pending word of the first segment
 * that has any). Taking a word's pending bits is one get-and-set, so each release is told by
 * exactly one thread and no slot is in two releaser calls; the releaser itself may run on several
 * threads at once, each with different slots. The taken bits keep their segment mapped until they
 * are freed (the {@link SegmentTable} rule). {@link #inFlight} counts taken-but-not-freed slots,
 * for gauges and growth only. A failed releaser call kills the segment (the segment lock, briefly)
 * and then runs {@code onSegmentKilled}; no lock is held while calling the releaser.
 */
final class ReleaseBatcher {
  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);

  private final String name;
  private final SegmentTable table;
  private final SlotAllocator allocator;
  private final SlotReleaser releaser;
  private final PoolCounters counters;
  private final int maxReleaseBatch;
  private final Runnable onSegmentKilled;
  private final LongSupplier ticker;

  /** Slots taken from pending bitmaps whose release is being told: neither free nor pending. */
  private final AtomicInteger inFlight = new AtomicInteger();

  ReleaseBatcher(
      String name,
      SegmentTable table,
      SlotAllocator allocator,
      SlotReleaser releaser,
      PoolCounters counters,
      int maxReleaseBatch,
      Runnable onSegmentKilled,
      LongSupplier ticker) {
    this.name = name;
    this.table = table;
    this.allocator = allocator;
    this.releaser = releaser;
    this.counters = counters;
    this.maxReleaseBatch = maxReleaseBatch;
    this.onSegmentKilled = onSegmentKilled;
    this.ticker = ticker;
  }

  /** Slots being told right now (never negative). */
  int inFlight() {
    return Math.max(0, inFlight.get());
  }

  /**
   * The pool has no free slot: take every pending release of the first active segment that has any,
   * tell the DataNode on this thread, keep one slot and free the rest (waiters first). When that
   * segment yields no slot (its release failed, or it died meanwhile), moves on to the next one
   * only before {@code deadline} (ticker time), so a caller starts no segment's round trip after
   * its allocation wait ran out. Null when nothing was pending, or no told segment yielded a slot.
   */
  Slot releaseOnCaller(long deadline) {
    for (PooledSegment entry : table.active()) {
      if (entry.hasPending()) {
        Slot slot = tellAndFree(entry, -1, true, true);
        if (slot != null) {
          return slot;
        }
        if (ticker.getAsLong() - deadline >= 0) {
          return null;
        }
      }
    }
    return null;
  }

  /**
   * A waiter that is not the oldest: tells every pending release of the first active segment that
   * has any, and hands the slots to the waiters in arrival order (itself included, in its turn).
   */
  void releaseForWaiters() {
    for (PooledSegment entry : table.active()) {
      if (entry.hasPending()) {
        tellAndFree(entry, -1, true, false);
        return;
      }
    }
  }

  /**
   * Tells and frees every pending release of one segment, a word at a time, so that a descheduled
   * maintenance thread never holds more than one word of slots out of circulation.
   */
  void releasePending(PooledSegment entry) {
    for (int w = 0; w < entry.wordCount(); w++) {
      if (entry.hasPending(w)) {
        tellAndFree(entry, w, false, false);
      }
    }
  }

  /**
   * Takes the pending releases of {@code entry} (word {@code onlyWord}, or every word if it is
   * negative), tells the DataNode in calls of at most the maximum batch ({@code onCaller}: on an
   * allocating caller's thread), then frees them. With {@code keepOne}, returns one of them
   * initialised for this caller (null if nothing was pending or the segment died meanwhile).
   */
  private Slot tellAndFree(PooledSegment entry, int onlyWord, boolean onCaller, boolean keepOne) {
    ReleaseBuffer buffer = ReleaseBuffer.acquire();
    try {
      int words = entry.wordCount();
      long[] taken = buffer.words(words);
      int n = 0;
      for (int w = 0; w < words; w++) {
        if ((onlyWord < 0 || w == onlyWord) && entry.hasPending(w)) {
          taken[w] = entry.takePending(w);
          n += Long.bitCount(taken[w]);
        }
      }
      if (n == 0) {
        return null;
      }
      inFlight.addAndGet(n);
      try {
        for (int w = 0; w < words; w++) {
          long bits = taken[w];
          while (bits != 0) {
            long bit = bits & -bits;
            bits ^= bit;
            buffer.ids.add(entry.segment.slot((w << 6) + Long.numberOfTrailingZeros(bit)).id());
            if (buffer.ids.size() == maxReleaseBatch) {
              tell(entry, buffer.view, onCaller);
              buffer.ids.clear();
            }
          }
        }
        tell(entry, buffer.view, onCaller);
        if (table.isClosed()) {
          // Not told (no messages after close): these must reach nobody. Close kills the segment
          // and returns it once every bit is back.
          for (int w = 0; w < words; w++) {
            if (taken[w] != 0) {
              entry.addFree(w, taken[w]);
            }
          }
          return null;
        }
        Slot mine = null;
        for (int w = 0; w < words; w++) {
          long bits = taken[w];
          if (bits == 0) {
            continue;
          }
          if (keepOne && mine == null) {
            long bit = bits & -bits;
            bits ^= bit;
            mine = entry.initClaimed(w, bit); // null (bit freed) if the segment died
          }
          if (bits != 0) {
            allocator.free(entry, w, bits);
          }
        }
        return mine;
      } finally {
        inFlight.addAndGet(-n);
      }
    } finally {
      buffer.recycle();
    }
  }

  /**
   * One {@link SlotReleaser} call, unless the segment is dead or the pool closed (the DataNode
   * drops the slots with the segment then). A failure gives up the segment as stock does.
   */
  private void tell(PooledSegment entry, List<SlotId> slots, boolean onCaller) {
    if (slots.isEmpty() || entry.state() == PooledSegment.DEAD || table.isClosed()) {
      return;
    }
    counters.releaseBatches.incrementAndGet();
    if (onCaller) {
      counters.callerReleaseBatches.incrementAndGet();
    }
    try {
      releaser.release(slots);
    } catch (IOException | RuntimeException | Error e) {
      // An Error too: rethrown, it would leave the taken slots neither free nor pending, and the
      // segment could never be returned. Whether the DataNode heard is unknown either way.
      counters.releaseFailures.incrementAndGet();
      LOG.warn(
          "Releasing {} slots of segment {} of {} failed; giving up the segment as stock does",
          slots.size(),
          entry.segment.id(),
          name,
          e);
      if (table.kill(entry)) {
        counters.segmentsDisconnected.incrementAndGet();
        onSegmentKilled.run();
      }
    }
  }
}
