package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class SlotPoolTest {
  private final LocalSegmentSource source = new LocalSegmentSource();
  private final BlockingQueue<List<SlotId>> releasedBatches = new LinkedBlockingQueue<>();
  private final SlotReleaser recordingReleaser =
      slots -> releasedBatches.add(new ArrayList<>(slots));
  private final List<SlotPool> pools = new ArrayList<>();

  private SlotPool.Builder builder() {
    return SlotPool.newBuilder("dn1", source, recordingReleaser)
        .releaseBatchDelay(Duration.ZERO)
        .initialFetchBackoff(Duration.ofMillis(1))
        .maxFetchBackoff(Duration.ofMillis(4));
  }

  private SlotPool track(SlotPool pool) {
    pools.add(pool);
    return pool;
  }

  @AfterEach
  void closePools() {
    pools.forEach(SlotPool::close);
  }

  /** Waits (bounded) for the background thread to reach a state, without a fixed sleep. */
  @SuppressWarnings("ThreadPriorityCheck") // yield: let the pool's threads run on 2 cores
  private static void await(String what, java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  @Test
  void allocatesStockInitialisedDistinctSlotsAndFailsFastWhenFull() throws Exception {
    source.dirtySlots();
    SlotPool pool =
        track(
            builder()
                .maxSegments(1)
                .maxAllocationWait(Duration.ZERO)
                .settingNames("wait-setting", "watermark-setting")
                .build());
    await("the first segment", () -> pool.stats().slotsFree() == 128);
    Set<SlotId> seen = new HashSet<>();
    for (int i = 0; i < 128; i++) {
      Slot slot = pool.allocate();
      assertEquals(Slot.VALID_FLAG, slot.loadVolatile(), "store 0, then set VALID");
      assertTrue(seen.add(slot.id()), "handed out twice: " + slot.id());
    }
    SlotPoolExhaustedException e = assertThrows(SlotPoolExhaustedException.class, pool::allocate);
    assertTrue(e.getMessage().contains("raise wait-setting (now 0 ms)"), e.getMessage());
    assertTrue(e.getMessage().contains("or watermark-setting (now 64 slots)"), e.getMessage());
    assertTrue(e.getMessage().contains("128 in use"), e.getMessage());
    SlotPoolStats stats = pool.stats();
    assertEquals(128, stats.allocations());
    assertEquals(1, stats.allocationTimeouts());
    assertEquals(128, stats.slotsInUse());
    assertEquals(0, stats.slotsFree());
    assertEquals(1, stats.segments());
  }

  @Test
  void allocationDoesNotWaitForAFetchInProgress() throws Exception {
    CountDownLatch fetchBlocked = new CountDownLatch(1);
    CountDownLatch unblock = new CountDownLatch(1);
    source.onFetch(
        n -> {
          if (n == 2) {
            fetchBlocked.countDown();
            await(unblock);
          }
        });
    // Watermark above one segment: the refill thread fetches a second one at once and hangs.
    SlotPool pool = track(builder().lowWatermark(200).maxAllocationWait(Duration.ZERO).build());
    assertTrue(fetchBlocked.await(10, TimeUnit.SECONDS));
    for (int i = 0; i < 128; i++) {
      pool.allocate(); // would throw at once if it waited for the loading segment
    }
    assertThrows(SlotPoolExhaustedException.class, pool::allocate);
    unblock.countDown();
  }

  private static void await(CountDownLatch latch) throws IOException {
    try {
      if (!latch.await(20, TimeUnit.SECONDS)) {
        throw new IOException("test latch timed out");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  @Test
  void releasesReachTheReleaserInBatchesAndOnlyThenAreReused() throws Exception {
    FakeTicker ticker = new FakeTicker();
    SlotPool pool =
        track(
            builder()
                .maxSegments(1)
                .lowWatermark(1)
                .ticker(ticker)
                .releaseBatchDelay(Duration.ofSeconds(1))
                .maxAllocationWait(Duration.ZERO)
                .build());
    await("the first segment", () -> pool.stats().slotsFree() == 128);
    List<Slot> slots = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      slots.add(pool.allocate());
    }
    for (Slot slot : slots) {
      pool.release(slot);
    }
    assertEquals(5, pool.stats().slotsPendingRelease());
    assertEquals(5, pool.stats().releases());
    // The batch delay counts from when the maintenance thread first saw the releases, which may
    // be after any given advance; keep advancing until the batch matures.
    List<SlotId> batch = null;
    for (int i = 0; i < 1000 && batch == null; i++) {
      ticker.advance(1, TimeUnit.SECONDS);
      pool.signalMaintenance();
      batch = releasedBatches.poll(10, TimeUnit.MILLISECONDS);
    }
    assertNotNull(batch);
    Set<SlotId> expected = new HashSet<>();
    slots.forEach(s -> expected.add(s.id()));
    assertEquals(expected, new HashSet<>(batch), "one batch with all five");
    await("free again", () -> pool.stats().slotsFree() == 128);
    assertEquals(1, pool.stats().releaseBatches());
    assertSame(slots.get(0), pool.allocate(), "lowest free slot is reused after the release");
  }

  @Test
  void releaseIsUrgentWhenThePoolRunsLow() throws Exception {
    FakeTicker ticker = new FakeTicker(); // never advanced: only urgency can send releases
    SlotPool pool =
        track(
            builder()
                .maxSegments(1)
                .lowWatermark(64)
                .ticker(ticker)
                .releaseBatchDelay(Duration.ofHours(1))
                .maxAllocationWait(Duration.ofSeconds(10))
                .build());
    for (int i = 0; i < 1000; i++) {
      pool.release(pool.allocate()); // 1000 > 128: must recycle through the releaser
    }
    assertEquals(1000, pool.stats().allocations());
    assertTrue(pool.stats().releaseBatches() >= 7, pool.stats().toString());
  }

  @Test
  void waitingAllocationGetsTheNextSegmentAndItsWaitIsRecorded() throws Exception {
    FakeTicker ticker = new FakeTicker();
    CountDownLatch release = new CountDownLatch(1);
    source.onFetch(n -> await(release));
    SlotPool pool =
        track(builder().ticker(ticker).maxAllocationWait(Duration.ofSeconds(20)).build());
    CompletableFuture<Slot> waiter =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return pool.allocate();
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
            });
    assertThrows(TimeoutException.class, () -> waiter.get(50, TimeUnit.MILLISECONDS));
    ticker.advance(7, TimeUnit.MILLISECONDS);
    release.countDown();
    assertTrue(waiter.get(10, TimeUnit.SECONDS).isValid());
    SlotPoolStats stats = pool.stats();
    assertEquals(1, stats.allocationsThatWaited());
    long max = stats.allocationWaitMaxNanos();
    assertTrue(Math.abs(max - 7_000_000) < 10_000, "wait recorded from the ticker: " + max);
  }

  @Test
  void exhaustedAfterTheBoundedWaitWithTheFetchFailureAttached() throws Exception {
    FakeTicker ticker = new FakeTicker();
    AtomicBoolean failed = new AtomicBoolean();
    source.onFetch(
        n -> {
          failed.set(true);
          throw new IOException("DataNode says no");
        });
    SlotPool pool = track(builder().ticker(ticker).maxAllocationWait(Duration.ofMillis(5)).build());
    await("a fetch failure", failed::get);
    CompletableFuture<Void> waiter =
        CompletableFuture.runAsync(
            () -> {
              IOException e = assertThrows(SlotPoolExhaustedException.class, pool::allocate);
              assertEquals(6_000_000, ((SlotPoolExhaustedException) e).waitedNanos());
              assertTrue(e.getMessage().contains("after waiting 6.0 ms"), e.getMessage());
              assertEquals("DataNode says no", e.getCause().getMessage());
            });
    assertThrows(TimeoutException.class, () -> waiter.get(20, TimeUnit.MILLISECONDS));
    ticker.advance(6, TimeUnit.MILLISECONDS);
    waiter.get(10, TimeUnit.SECONDS);
    assertTrue(pool.stats().segmentFetchFailures() >= 1);
    assertEquals(1, pool.stats().allocationTimeouts());
  }

  @Test
  void fetchFailuresBackOffAndRecover() throws Exception {
    source.onFetch(
        n -> {
          if (n <= 3) {
            throw new IOException("transient " + n);
          }
        });
    // Watermark 1: one 128-slot segment covers it (and the 64 between checks) after an allocation.
    SlotPool pool =
        track(builder().lowWatermark(1).maxAllocationWait(Duration.ofSeconds(10)).build());
    assertTrue(pool.allocate().isValid());
    assertEquals(3, pool.stats().segmentFetchFailures());
    assertEquals(1, pool.stats().segmentFetches());
  }

  @Test
  void disconnectInvalidatesEverySlotAtOnceAndReturnsTheSegmentWhenEmpty() throws Exception {
    SlotPool pool = track(builder().maxAllocationWait(Duration.ofSeconds(10)).build());
    Slot a = pool.allocate();
    Slot b = pool.allocate();
    Segment first = a.segment();
    assertTrue(pool.segmentDisconnected(first.id()));
    assertFalse(pool.segmentDisconnected(first.id()), "only once");
    assertFalse(a.isValid());
    assertFalse(b.isValid());
    Slot c = pool.allocate();
    assertTrue(c.isValid());
    assertFalse(c.segment() == first, "nothing more is allocated from a dead segment");
    pool.release(a);
    assertNull(source.returnedQueue.poll(20, TimeUnit.MILLISECONDS), "b still holds it");
    pool.release(b);
    assertSame(first, source.returnedQueue.poll(10, TimeUnit.SECONDS));
    assertTrue(first.isClosed());
    SlotPoolStats stats = pool.stats();
    assertEquals(1, stats.segmentsDisconnected());
    assertEquals(1, stats.segmentsReturned());
    assertTrue(releasedBatches.isEmpty(), "no release messages for a dead segment");
  }

  @Test
  void aFailedReleaseGivesUpTheSegmentAsStockDoes() throws Exception {
    AtomicBoolean fail = new AtomicBoolean(true);
    SlotPool pool =
        track(
            SlotPool.newBuilder(
                    "dn1",
                    source,
                    slots -> {
                      if (fail.get()) {
                        throw new IOException("socket closed");
                      }
                    })
                .releaseBatchDelay(Duration.ZERO)
                .build());
    Slot held = pool.allocate();
    Slot released = pool.allocate();
    pool.release(released);
    await("the release to fail", () -> pool.stats().segmentsDisconnected() == 1);
    assertEquals(1, pool.stats().releaseFailures());
    assertFalse(held.isValid(), "every slot of the segment is invalidated");
    fail.set(false);
    Slot fresh = pool.allocate();
    assertTrue(fresh.isValid());
    assertFalse(fresh.segment() == held.segment());
    pool.release(held);
    assertSame(held.segment(), source.returnedQueue.poll(10, TimeUnit.SECONDS));
    assertEquals(1, pool.stats().segmentsDisconnected());
  }

  @Test
  void surplusEmptySegmentsAreReturned() throws Exception {
    SlotPool pool =
        track(
            builder()
                .lowWatermark(16)
                .highWatermark(200)
                .maxAllocationWait(Duration.ofSeconds(10))
                .build());
    List<Slot> slots = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      slots.add(pool.allocate());
    }
    int peak = pool.stats().segments();
    assertTrue(peak >= 4, "500 slots need 4 segments: " + peak);
    slots.forEach(pool::release);
    await("surplus returned", () -> pool.stats().segments() < peak);
    await("back to at most high watermark", () -> pool.stats().slotsFree() <= 200 + 128);
    // The pool counts a segment returned just before the source records it.
    await(
        "source and pool agree",
        () -> source.fetched().size() - source.returned().size() == pool.stats().segments());
    SlotPoolStats stats = pool.stats();
    assertTrue(stats.slotsFree() >= 16, stats.toString());
    assertEquals(0, stats.slotsInUse());
    assertEquals(source.returned().size(), stats.segmentsReturned());
  }

  @Test
  void releaseUnregisteredFreesAtOnceWithoutAMessage() throws Exception {
    SlotPool pool =
        track(
            builder()
                .maxSegments(1)
                .maxAllocationWait(Duration.ZERO)
                .settingNames("wait-setting", "watermark-setting")
                .build());
    await("the first segment", () -> pool.stats().slotsFree() == 128);
    Slot slot = pool.allocate();
    pool.releaseUnregistered(slot);
    assertFalse(slot.isValid());
    assertEquals(0, pool.stats().slotsInUse());
    assertSame(slot, pool.allocate());
    assertTrue(releasedBatches.isEmpty());
  }

  @Test
  void misuseIsDetected() throws Exception {
    // The check is best-effort: once the maintenance thread takes the first release to tell the
    // DataNode, a second release slips past it until the slot is free again (CI once lost that
    // race). A long batch delay keeps the first release pending here.
    SlotPool pool =
        track(
            builder()
                .maxAllocationWait(Duration.ofSeconds(10))
                .releaseBatchDelay(Duration.ofMinutes(5))
                .build());
    Slot slot = pool.allocate();
    pool.release(slot);
    assertThrows(IllegalStateException.class, () -> pool.release(slot));
    Slot unallocated = slot.segment().slot(100);
    assertThrows(IllegalStateException.class, () -> pool.release(unallocated));
    try (Segment foreign = SegmentFactory.newBuilder().build().createSegment(ShmId.random(), 64)) {
      assertThrows(IllegalArgumentException.class, () -> pool.release(foreign.slot(0)));
    }
  }

  @Test
  void closeInvalidatesAndReturnsEmptySegmentsNowAndOthersOnTheirLastRelease() throws Exception {
    SlotPool pool =
        track(
            builder()
                .maxSegments(2)
                .lowWatermark(200)
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());
    await("two segments", () -> pool.stats().slotsFree() == 256);
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 128; i++) {
      held.add(pool.allocate()); // allocation packs the first segment
    }
    Segment first = held.get(0).segment();
    pool.close();
    pool.close();
    assertFalse(held.get(0).isValid(), "close invalidates held slots");
    assertEquals(1, source.returned().size(), "the empty segment is returned at once");
    assertFalse(source.returned().contains(first));
    assertThrows(SlotPoolClosedException.class, pool::allocate);
    for (Slot slot : held) {
      pool.release(slot);
    }
    assertEquals(2, source.returned().size(), "the last release returns the other");
    assertTrue(first.isClosed());
    assertEquals(0, pool.stats().segments());
  }

  @Test
  void closeWakesWaitersWithATypedException() throws Exception {
    SlotPool pool =
        track(builder().maxSegments(1).maxAllocationWait(Duration.ofSeconds(20)).build());
    for (int i = 0; i < 128; i++) {
      pool.allocate();
    }
    CompletableFuture<Throwable> waiter =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                pool.allocate();
                return null;
              } catch (IOException e) {
                return e;
              }
            });
    assertThrows(TimeoutException.class, () -> waiter.get(50, TimeUnit.MILLISECONDS));
    pool.close();
    assertTrue(waiter.get(10, TimeUnit.SECONDS) instanceof SlotPoolClosedException);
  }

  @Test
  void builderRejectsNonsense() {
    assertThrows(IllegalArgumentException.class, () -> builder().lowWatermark(-1));
    assertThrows(
        IllegalArgumentException.class,
        () -> builder().lowWatermark(100).highWatermark(10).build());
    assertThrows(IllegalArgumentException.class, () -> builder().maxSegments(0));
    assertThrows(
        IllegalArgumentException.class, () -> builder().maxAllocationWait(Duration.ofMillis(-1)));
    assertThrows(NullPointerException.class, () -> SlotPool.newBuilder("x", source, null));
  }

  @Test
  void interruptedWaitRestoresTheFlag() throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    source.onFetch(n -> await(never));
    SlotPool pool = track(builder().maxAllocationWait(Duration.ofSeconds(20)).build());
    CompletableFuture<Boolean> result = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try {
                pool.allocate();
                result.complete(false);
              } catch (java.io.InterruptedIOException e) {
                result.complete(Thread.currentThread().isInterrupted());
              } catch (IOException e) {
                result.completeExceptionally(e);
              }
            });
    t.start();
    await("the caller to wait", () -> t.getState() == Thread.State.TIMED_WAITING);
    t.interrupt();
    try {
      assertTrue(result.get(10, TimeUnit.SECONDS));
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    }
    never.countDown();
  }

  /**
   * The level is checked once per 64 allocations (when a free bitmap word runs dry), so the pool
   * must fetch before it is down to the watermark, not at it: with the default watermark of 64 and
   * 128-slot segments it used to see 64 (not below) after half a segment, and the caller after the
   * segment's last slot waited for a whole fetch.
   */
  @Test
  void theNextSegmentIsFetchedWhileTheWatermarkStillHolds() throws Exception {
    SlotPool pool = track(builder().lowWatermark(64).build());
    await("the first segment", () -> pool.stats().segmentFetches() == 1);
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      held.add(pool.allocate());
    }
    await(
        "a second segment while 64 slots of the first are still free",
        () -> pool.stats().segmentFetches() == 2);
    for (Slot slot : held) {
      pool.release(slot);
    }
  }
}
