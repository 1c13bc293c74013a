package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.internal.HeapWords;
import org.jetbrains.lincheck.Lincheck;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Model checking of the slot word protocol (VALID, ANCHORABLE, anchor count) against a concurrent
 * invalidation: Lincheck explores the interleavings of the threads at every shared access (the
 * word's loads and CASes, the pooled segment's state) and reports the schedule of any that breaks
 * an assertion. {@link Slot}'s code runs over {@link HeapWords} in the first test (Lincheck does
 * not see accesses to mapped memory, so it could not split a slot operation there), and over the
 * mapped segment in the second, whose race is on the pooled segment's state.
 */
class SlotWordModelTest {
  private static final int INVOCATIONS = 1_000;
  private static final long VALID = Slot.VALID_FLAG;
  private static final long ANCHORABLE = Slot.ANCHORABLE_FLAG;

  private static Segment segment;

  @BeforeAll
  static void mapSegment() throws Exception {
    // Two slots: one word of a free bitmap, so claiming slot 0 never empties it (no pool needed).
    segment =
        SegmentFactory.newBuilder().build().createSegment(ShmId.of(0, 1), 2 * Slot.BYTES_PER_SLOT);
  }

  @AfterAll
  static void closeSegment() {
    segment.close();
  }

  /**
   * Two readers anchor (one of them drops its anchor again) while the DataNode clears VALID: no
   * anchor is added after the invalidation (the count the DataNode sees right after it is final,
   * but for the anchor dropped later), none is lost, and the flags end exactly as the DataNode left
   * them.
   */
  @Test
  void anchorsRaceInvalidationWithoutLostOrLateAnchors() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          // The protocol's own code (Slot) over words Lincheck can interleave: see HeapWords.
          Slot slot = new Slot(segment, new HeapWords(Slot.BYTES_PER_SLOT), 0);
          slot.storeVolatile(VALID | ANCHORABLE);
          boolean[] anchored = new boolean[2];
          int[] countAtInvalidation = new int[1];
          Thread holder = new Thread(() -> anchored[0] = slot.tryAnchor());
          Thread brief =
              new Thread(
                  () -> {
                    anchored[1] = slot.tryAnchor();
                    if (anchored[1]) {
                      slot.releaseAnchor();
                    }
                  });
          Thread dataNode =
              new Thread(
                  () -> {
                    slot.makeInvalid();
                    countAtInvalidation[0] = slot.anchorCount();
                  });
          startAndJoin(holder, brief, dataNode);
          long word = slot.loadVolatile();
          assertEquals(0, word & VALID, "VALID stays clear");
          assertEquals(ANCHORABLE, word & ANCHORABLE, "ANCHORABLE untouched by either side");
          int held = anchored[0] ? 1 : 0;
          assertEquals(held, slot.anchorCount(), "anchors held at the end");
          if (anchored[0]) {
            assertTrue(
                countAtInvalidation[0] >= 1,
                "the holder's anchor was added before VALID was cleared, never after");
          }
          assertFalse(slot.isAnchored(), "not anchored once invalid");
        });
  }

  /**
   * The pool makes a claimed slot VALID while the segment is being killed (state → DEAD, then every
   * slot invalidated, as {@link SegmentTable#kill} does): either the claim sees the death and frees
   * the bit, or it returns a slot that the kill then invalidates. A slot that is VALID in a dead
   * segment, or a claimed bit that is neither held nor free, fails.
   */
  @Test
  void claimRacesKillNeverLeavesAValidSlotInADeadSegment() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          segment.slot(0).storeVolatile(0);
          segment.slot(1).storeVolatile(0);
          PooledSegment entry = new PooledSegment(null, segment);
          Slot[] claimed = new Slot[1];
          Thread allocator = new Thread(() -> claimed[0] = entry.tryClaim());
          Thread killer =
              new Thread(
                  () -> {
                    entry.transition(PooledSegment.ACTIVE, PooledSegment.DEAD);
                    segment.invalidateAll();
                  });
          startAndJoin(allocator, killer);
          assertEquals(PooledSegment.DEAD, entry.state());
          assertFalse(segment.slot(0).isValid(), "no VALID slot in a dead segment");
          assertEquals(
              claimed[0] == null ? 2 : 1, entry.freeCount(), "a refused claim frees its bit");
        });
  }

  private static void startAndJoin(Thread... threads) {
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
