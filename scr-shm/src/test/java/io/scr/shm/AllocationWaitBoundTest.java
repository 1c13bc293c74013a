package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How long an allocation can take when it tells pending releases itself: at most the maximum wait
 * plus the one segment's release round trip it started before the wait ran out. Time is a fake
 * ticker that only the releaser moves: each releaser call on the allocating thread is a slow
 * DataNode exchange that takes 40 ms and fails (so the caller gets no slot from it and moves on).
 */
@Timeout(60)
class AllocationWaitBoundTest {
  private static final long EXCHANGE_MILLIS = 40;
  private static final long MAX_WAIT_MILLIS = 50;

  @Test
  void aCallerStartsNoReleaseRoundTripAfterItsWaitRanOut() throws Exception {
    FakeTicker ticker = new FakeTicker();
    Thread caller = Thread.currentThread();
    AtomicInteger callsOnCaller = new AtomicInteger();
    SlotReleaser slowFailingExchange =
        slots -> {
          if (Thread.currentThread() == caller) {
            callsOnCaller.incrementAndGet();
            ticker.advance(EXCHANGE_MILLIS, TimeUnit.MILLISECONDS);
          }
          throw new IOException("the DataNode exchange timed out");
        };
    // Exactly three segments, then no more (a later fetch fails and, on this clock, never retries).
    LocalSegmentSource source =
        new LocalSegmentSource()
            .onFetch(
                n -> {
                  if (n > 3) {
                    throw new IOException("no fourth segment in this test");
                  }
                });
    List<Slot> held = new ArrayList<>();
    try (SlotPool pool =
        SlotPool.newBuilder("dn-slow-release", source, slowFailingExchange)
            .lowWatermark(3 * 128 - 64) // the refill level is the low watermark + 64: 3 segments
            .maxSegments(3)
            .maxReleaseBatch(256) // a segment's 128 releases are not urgent for maintenance
            .releaseBatchDelay(Duration.ofHours(1)) // and never mature on this clock
            .maxAllocationWait(Duration.ofMillis(MAX_WAIT_MILLIS))
            .ticker(ticker)
            .build()) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (pool.stats().slotsFree() < 3 * 128) {
        assertTrue(System.nanoTime() < deadline, "three segments never arrived: " + pool.stats());
        Thread.onSpinWait();
      }
      for (int i = 0; i < 3 * 128; i++) {
        held.add(pool.allocate());
      }
      for (Slot slot : held) {
        pool.release(slot); // pending in all three segments, nobody tells them yet
      }

      long start = ticker.getAsLong();
      SlotPoolExhaustedException e = assertThrows(SlotPoolExhaustedException.class, pool::allocate);
      long took = ticker.getAsLong() - start;

      // Segment 1's round trip ends at 40 ms (before the 50 ms deadline: go on), segment 2's at
      // 80 ms (past it: stop). Telling segment 3 as well would take the caller to 120 ms.
      assertEquals(2, callsOnCaller.get(), "releaser calls on the allocating thread");
      assertTrue(
          took <= TimeUnit.MILLISECONDS.toNanos(MAX_WAIT_MILLIS + EXCHANGE_MILLIS),
          "took " + took / 1_000_000 + " ms, more than the wait plus one exchange");
      assertEquals(took, e.waitedNanos());
    }
  }
}
