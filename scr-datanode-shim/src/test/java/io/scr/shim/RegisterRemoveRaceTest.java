package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistryTest.FakeReplica;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A segment removed (its connection closed) while a slot in it is being registered must leave
 * nothing behind in the block index; a stale entry would keep the closed segment reachable and be
 * walked by every scan.
 */
class RegisterRemoveRaceTest {
  @Test
  void aRemoveRightAfterTheSegmentLockIsReleasedLeavesNoIndexEntry() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    ClientLimits limits = new ClientLimits(10, 10, 10);
    SegmentRegistry registry = new SegmentRegistry(limits, metrics);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    seg.segment.slot(0).makeValid();
    BlockKey key = new BlockKey("bp", 1);

    CountDownLatch lockReleased = new CountDownLatch(1);
    CountDownLatch removed = new CountDownLatch(1);
    registry.afterRegister =
        () -> {
          lockReleased.countDown();
          try {
            assertTrue(removed.await(30, TimeUnit.SECONDS), "the remove ran");
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
    ExecutorService registering = Executors.newSingleThreadExecutor();
    try {
      Future<?> registered =
          registering.submit(
              () -> {
                registry.register(seg, 0, key, new FakeReplica(1, 7), 7, false);
                return null;
              });
      assertTrue(lockReleased.await(30, TimeUnit.SECONDS), "the registration got its slot");
      registry.remove(seg); // the client's connection closes now, on another thread
      removed.countDown();
      registered.get(30, TimeUnit.SECONDS);
    } finally {
      registering.shutdownNow();
    }

    assertEquals(0, registry.watchedBlocks(), "no index entry outlives its segment");
    assertTrue(registry.watched(key).isEmpty());
    assertNull(seg.ref(0));
    assertEquals(0, metrics.snapshot().get("live.slots"));
    assertEquals(0, limits.clientCount());
  }
}
