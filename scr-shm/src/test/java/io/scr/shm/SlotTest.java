package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The slot word operations behave exactly as stock ShortCircuitShm.Slot. */
class SlotTest {
  private Segment segment;
  private Slot slot;

  @BeforeEach
  void map() throws IOException {
    segment = SegmentFactory.newBuilder().build().createSegment(ShmId.random(), 8192);
    slot = segment.slot(7);
  }

  @AfterEach
  void unmap() {
    segment.close();
  }

  @Test
  void anchorOnlyWhenValidAndAnchorable() {
    assertFalse(slot.tryAnchor(), "neither flag");
    slot.makeAnchorable();
    assertFalse(slot.tryAnchor(), "anchorable but not valid");
    slot.makeUnanchorable();
    slot.makeValid();
    assertFalse(slot.tryAnchor(), "valid but not anchorable");
    assertEquals(Slot.VALID_FLAG, slot.loadVolatile(), "failed anchors change nothing");
    slot.makeAnchorable();
    assertTrue(slot.tryAnchor());
    assertTrue(slot.tryAnchor());
    assertEquals(2, slot.anchorCount());
    assertTrue(slot.isAnchored());
  }

  @Test
  void anchorCountSaturatesAndReleaseIsBalanced() {
    slot.storeVolatile(Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG | Slot.ANCHOR_COUNT_MASK);
    assertFalse(slot.tryAnchor(), "count at its maximum");
    slot.storeVolatile(Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG);
    assertTrue(slot.tryAnchor());
    slot.releaseAnchor();
    assertEquals(0, slot.anchorCount());
    assertFalse(slot.isAnchored());
    assertThrows(IllegalStateException.class, slot::releaseAnchor);
  }

  @Test
  void invalidationKeepsAnchorsAndHidesThemFromIsAnchored() {
    slot.makeValid();
    slot.makeAnchorable();
    assertTrue(slot.tryAnchor());
    slot.makeInvalid();
    assertFalse(slot.isValid());
    assertEquals(1, slot.anchorCount());
    assertFalse(slot.isAnchored(), "stock: anchored means VALID and count > 0");
    assertFalse(slot.tryAnchor(), "no new anchors on an invalid slot");
    slot.releaseAnchor();
    assertEquals(Slot.ANCHORABLE_FLAG, slot.loadVolatile());
  }

  @Test
  void flagsAreIdempotentAndIndependent() {
    slot.makeValid();
    slot.makeValid();
    slot.makeAnchorable();
    slot.makeInvalid();
    slot.makeInvalid();
    assertEquals(Slot.ANCHORABLE_FLAG, slot.loadVolatile());
    assertTrue(slot.compareAndSet(Slot.ANCHORABLE_FLAG, 0L));
    assertFalse(slot.compareAndSet(Slot.ANCHORABLE_FLAG, 1L));
    assertEquals(0L, slot.loadVolatile());
  }

  @Test
  void idsNameSegmentAndIndex() {
    assertEquals(SlotId.of(segment.id(), 7), slot.id());
    assertEquals(7, slot.index());
    assertEquals(segment, slot.segment());
    assertEquals(ShmId.of(1, 2), ShmId.of(1, 2));
    assertEquals("0000000000000001000000000000000f", ShmId.of(1, 15).toString());
    assertTrue(ShmId.of(1, 0).compareTo(ShmId.of(0, 5)) > 0);
  }
}
