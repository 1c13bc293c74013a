package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The benchmark entry point drives the real registry: scans find exactly the changed replicas. */
class InvalidationScanFixtureTest {
  @Test
  void scansInvalidateOnlyTheSlotsOfReplacedOrRemovedReplicas() throws Exception {
    try (InvalidationScanFixture f = InvalidationScanFixture.create(1000, 2)) {
      assertEquals(1000, f.slots());
      assertEquals(500, f.watchedBlocks());
      assertEquals(0, f.scan(), "nothing changed");
      assertEquals(1000, f.validSlots());

      f.replaceReplica(3); // moved or finalized: a new replica object
      f.removeReplica(7); // deleted
      assertEquals(4, f.scan());
      assertEquals(996, f.validSlots());
      assertEquals(498, f.watchedBlocks());
      assertEquals(0, f.scan(), "invalidated slots are no longer watched");
    }
  }

  @Test
  void spansSegmentsOfOneHundredTwentyEightSlots() throws Exception {
    try (InvalidationScanFixture f = InvalidationScanFixture.create(300, 1)) {
      assertEquals(300, f.validSlots());
      f.removeReplica(299); // the last slot of the third segment
      assertEquals(1, f.scan());
      assertEquals(299, f.validSlots());
    }
  }

  @Test
  void rejectsEmptyFixtures() {
    assertThrows(IllegalArgumentException.class, () -> InvalidationScanFixture.create(0, 1));
  }
}
