package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistryTest.FakeReplica;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * An {@code Error} in one invalidation scan (an InternalError from a truncated segment, an
 * OutOfMemoryError) must not stop invalidation for every client. The scanner runs on a scheduler
 * the test steps by hand and a fake ticker, so nothing here waits.
 */
class InvalidationScannerTest {
  /** Scans scheduled and not yet run, in order, with their delays; run by {@link #runNext}. */
  private static final class ManualScheduler implements InvalidationScanner.Scheduler {
    final Deque<Runnable> pending = new ArrayDeque<>();
    final Deque<Long> delays = new ArrayDeque<>();

    @Override
    public void schedule(Runnable scan, long delayMs) {
      pending.add(scan);
      delays.add(delayMs);
    }

    /** Runs the next scheduled scan on this thread, as the control thread would. */
    void runNext() {
      assertFalse(pending.isEmpty(), "a scan is scheduled");
      delays.poll();
      pending.poll().run();
    }
  }

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
    ManualScheduler control = new ManualScheduler();
    AtomicLong now = new AtomicLong();
    InvalidationScanner scanner =
        new InvalidationScanner(registry, () -> deletedAfterAFault, control, now::get, metrics, 5);
    try {
      scanner.start();
      assertEquals(5L, control.delays.peek(), "the first scan one interval from now");
      control.runNext(); // the faulting scan
      assertTrue(seg.segment.slot(0).isValid(), "the faulting scan invalidated nothing");
      assertEquals(1, control.pending.size(), "the next scan was scheduled after the Error");
      assertEquals(5L, control.delays.peek(), "one interval later");
      control.runNext();
      assertFalse(
          seg.segment.slot(0).isValid(),
          "a scan after the failed one cleared VALID (lookups: " + lookups.get() + ")");
      assertEquals(1, metrics.snapshot().get("invalidation_scan_failures"), "the failure counted");
      assertEquals(1, metrics.snapshot().get("slots_invalidated"));
    } finally {
      scanner.stop();
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
    ManualScheduler control = new ManualScheduler();
    AtomicLong now = new AtomicLong();
    InvalidationScanner scanner =
        new InvalidationScanner(
            registry,
            () ->
                (bp, id) -> {
                  throw new OutOfMemoryError("Java heap space (injected)");
                },
            control,
            now::get,
            metrics,
            1);
    try {
      scanner.start();
      for (int i = 0; i < 5; i++) {
        control.runNext();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
      }
      assertTrue(metrics.invalidationScanFailures.sum() >= 5, "retried after each Error");
      scanner.stop();
      long stoppedAt = metrics.invalidationScanFailures.sum();
      // Whatever was scheduled before stop() may still run; it must not schedule another.
      while (!control.pending.isEmpty()) {
        control.runNext();
      }
      assertTrue(metrics.invalidationScanFailures.sum() <= stoppedAt + 1, "stop() ends the loop");
    } finally {
      registry.remove(seg);
    }
  }

  @Test
  void aLongScanIsFollowedByAPauseOfNineTimesItsDuration() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    SegmentRegistry registry = new SegmentRegistry(new ClientLimits(10, 10, 10), metrics);
    ManualScheduler control = new ManualScheduler();
    AtomicLong now = new AtomicLong();
    SegmentRegistry.ReplicaLookup slow =
        (bp, id) -> {
          throw new AssertionError("no block is registered");
        };
    InvalidationScanner scanner =
        new InvalidationScanner(
            registry,
            () -> {
              now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100)); // the scan takes 100 ms
              return slow;
            },
            control,
            now::get,
            metrics,
            200);
    scanner.start();
    control.runNext();
    assertEquals(900L, control.delays.peek(), "9 x the 100 ms scan, over the 200 ms interval");
    scanner.stop();
  }
}
