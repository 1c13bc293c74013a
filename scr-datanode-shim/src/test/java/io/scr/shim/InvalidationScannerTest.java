package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistryTest.FakeReplica;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 15 finding 3 (scan side): an {@code Error} in one invalidation scan (an InternalError from
 * a truncated segment, an OutOfMemoryError) must not stop invalidation for every client.
 */
class InvalidationScannerTest {
  @Test
  void anErrorInOneScanDoesNotStopLaterScansFromInvalidating() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    SegmentRegistry registry = new SegmentRegistry(new ClientLimits(10, 10, 10), metrics);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    FakeReplica replica = new FakeReplica(1, 7);
    seg.segment.slot(0).makeValid(); // the client's part
    registry.register(seg, 0, new BlockKey("bp", 1), replica, 7, false);

    AtomicInteger lookups = new AtomicInteger();
    SegmentRegistry.ReplicaLookup deletedAfterAFault =
        (bp, id) -> {
          if (lookups.incrementAndGet() == 1) {
            throw new InternalError(
                "a fault occurred in an unsafe memory access operation (as SIGBUS raises it)");
          }
          return null; // the replica was deleted: the slot must be invalidated
        };
    ScheduledThreadPoolExecutor control = new ScheduledThreadPoolExecutor(1);
    InvalidationScanner scanner =
        new InvalidationScanner(registry, () -> deletedAfterAFault, control, metrics, 5);
    try {
      scanner.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (seg.segment.slot(0).isValid() && System.nanoTime() < deadline) {
        Thread.sleep(5); // polling an observable outcome of another thread, with a deadline
      }
      assertFalse(
          seg.segment.slot(0).isValid(),
          "a scan after the failed one cleared VALID (lookups: " + lookups.get() + ")");
      assertEquals(1, metrics.snapshot().get("invalidation_scan_failures"), "the failure counted");
      assertEquals(1, metrics.snapshot().get("slots_invalidated"));
    } finally {
      scanner.stop();
      control.shutdownNow();
      assertTrue(control.awaitTermination(10, TimeUnit.SECONDS));
      registry.remove(seg);
    }
  }

  @Test
  void aScanThatFailsEveryTimeKeepsBeingRetriedUntilStopped() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    SegmentRegistry registry = new SegmentRegistry(new ClientLimits(10, 10, 10), metrics);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    seg.segment.slot(3).makeValid();
    registry.register(seg, 3, new BlockKey("bp", 3), new FakeReplica(3, 1), 1, false);
    ScheduledThreadPoolExecutor control = new ScheduledThreadPoolExecutor(1);
    InvalidationScanner scanner =
        new InvalidationScanner(
            registry,
            () ->
                (bp, id) -> {
                  throw new OutOfMemoryError("Java heap space (injected)");
                },
            control,
            metrics,
            1);
    try {
      scanner.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (metrics.invalidationScanFailures.sum() < 5 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertTrue(metrics.invalidationScanFailures.sum() >= 5, "retried after each Error");
      scanner.stop();
      long stoppedAt = metrics.invalidationScanFailures.sum();
      Thread.sleep(100); // nothing may run after stop(): at most the scan already under way
      assertTrue(metrics.invalidationScanFailures.sum() <= stoppedAt + 1, "stop() ends the loop");
    } finally {
      control.shutdownNow();
      assertTrue(control.awaitTermination(10, TimeUnit.SECONDS));
      registry.remove(seg);
    }
  }
}
