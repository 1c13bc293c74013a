package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Creator-side registration rules (as ShortCircuitRegistry), invalidation and close. */
class SegmentTest {
  private final SegmentFactory factory = SegmentFactory.newBuilder().build();

  @Test
  void registerChecksRangeUseAndValidThenSetsAnchorable() throws IOException {
    try (Segment segment = factory.createSegment(ShmId.random(), 8192)) {
      InvalidSlotException e =
          assertThrows(InvalidSlotException.class, () -> segment.registerSlot(128, false));
      assertTrue(e.getMessage().contains("invalid slot index 128"), e.getMessage());
      assertThrows(InvalidSlotException.class, () -> segment.registerSlot(-1, false));
      e = assertThrows(InvalidSlotException.class, () -> segment.registerSlot(5, true));
      assertTrue(e.getMessage().contains("not marked as valid"), e.getMessage());
      assertFalse(segment.isRegistered(5));

      segment.slot(5).makeValid(); // what the client does before sending the slot id
      Slot slot = segment.registerSlot(5, true);
      assertTrue(slot.isAnchorable());
      e = assertThrows(InvalidSlotException.class, () -> segment.registerSlot(5, true));
      assertTrue(e.getMessage().contains("already in use"), e.getMessage());

      segment.slot(6).storeVolatile(Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG);
      assertFalse(segment.registerSlot(6, false).isAnchorable(), "uncached block: unanchorable");
      assertEquals(2, segment.registeredCount());

      segment.unregisterSlot(5);
      assertFalse(slot.isValid(), "unregister clears VALID as the DataNode does on release");
      assertThrows(InvalidSlotException.class, () -> segment.unregisterSlot(5));
      slot.storeVolatile(0);
      slot.makeValid();
      segment.registerSlot(5, false); // reusable after release
      assertEquals(2, segment.registeredCount());
    }
  }

  @Test
  void invalidateAllClearsEveryValidBitAtOnce() throws IOException {
    try (Segment segment = factory.createSegment(ShmId.random(), 8192)) {
      for (int i = 0; i < segment.slotCount(); i += 3) {
        segment.slot(i).storeVolatile(Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG | 1);
      }
      segment.invalidateAll();
      for (int i = 0; i < segment.slotCount(); i++) {
        assertFalse(segment.slot(i).isValid());
        assertEquals(i % 3 == 0 ? Slot.ANCHORABLE_FLAG | 1 : 0, segment.slot(i).loadVolatile());
      }
    }
  }

  @Test
  void closeIsIdempotentAndGuardsCreatorOperations() throws IOException {
    Segment segment = factory.createSegment(ShmId.random(), 8192);
    assertFalse(segment.isClosed());
    segment.close();
    segment.close();
    assertTrue(segment.isClosed());
    assertThrows(IllegalStateException.class, segment::invalidateAll);
    assertThrows(IllegalStateException.class, () -> segment.registerSlot(0, false));
    assertTrue(segment.slot(0).toString().contains("closed"));
  }

  @Test
  void segmentsAndFdsShareOneNamedDaemonCleanerThread() throws IOException {
    try (SharedMemoryFd fd = factory.createFd(8192);
        Segment segment = Segment.map(ShmId.random(), fd.fd(), 8192)) {
      segment.slot(0).makeValid();
    }
    List<Thread> cleaners =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("scr-shm-cleaner"))
            .collect(Collectors.toList());
    assertEquals(1, cleaners.size(), "one cleaner thread for the module: " + cleaners);
    assertTrue(cleaners.get(0).isDaemon());
  }
}
