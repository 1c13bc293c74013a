package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The pool's lifecycle under failure: a disconnect that races the fetch of its segment is not lost,
 * an {@code Error} does not stop a background thread, a pool without a low watermark fetches on
 * demand, and exhaustion is cheap.
 */
@Timeout(60)
class SlotPoolLifecycleTest {
  private final LocalSegmentSource local = new LocalSegmentSource();
  private final BlockingQueue<List<SlotId>> told = new LinkedBlockingQueue<>();

  /** Records each batch (the pool reuses the list it passes). */
  private final SlotReleaser recorder = slots -> told.add(new ArrayList<>(slots));

  private final List<SlotPool> pools = new ArrayList<>();

  @AfterEach
  void closePools() {
    pools.forEach(SlotPool::close);
  }

  private SlotPool track(SlotPool pool) {
    pools.add(pool);
    return pool;
  }

  /**
   * A source that watches its peer from {@code fetch} (as the client's DataNode endpoint did): the
   * first segment's peer closes it after the fetch and before the pool adopts it; the watcher
   * thread reports it at once, on its own thread, and {@code fetch} returns only after that.
   */
  private static final class RacingSource implements SegmentSource {
    final LocalSegmentSource delegate;
    final AtomicReference<SlotPool> pool = new AtomicReference<>();
    final CountDownLatch poolKnown = new CountDownLatch(1);
    final AtomicInteger fetches = new AtomicInteger();
    volatile Segment droppedByPeer;

    RacingSource(LocalSegmentSource delegate) {
      this.delegate = delegate;
    }

    void pool(SlotPool p) {
      pool.set(p);
      poolKnown.countDown();
    }

    @Override
    public Segment fetch() throws IOException {
      Segment segment = delegate.fetch();
      if (fetches.incrementAndGet() == 1) {
        try {
          if (!poolKnown.await(10, TimeUnit.SECONDS)) {
            throw new IOException("the test never handed over the pool");
          }
          Thread watcher = new Thread(() -> pool.get().segmentDisconnected(segment.id()));
          watcher.start();
          watcher.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException(e);
        }
        droppedByPeer = segment;
      }
      return segment;
    }

    @Override
    public void returnSegment(Segment segment) {
      delegate.returnSegment(segment);
    }
  }

  @Test
  void aDisconnectBetweenFetchAndAdoptIsNotLost() throws Exception {
    RacingSource source = new RacingSource(local);
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", source, recorder)
                .initialFetchBackoff(Duration.ofMillis(1))
                .maxFetchBackoff(Duration.ofMillis(4))
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());
    source.pool(pool);

    Slot slot = pool.allocate();

    Segment dead = source.droppedByPeer;
    assertTrue(dead != null, "the first fetch reported its segment disconnected");
    assertNotSame(dead, slot.segment(), "no slot from a segment whose peer is gone");
    assertTrue(slot.isValid());
    assertSame(dead, local.returnedQueue.poll(10, TimeUnit.SECONDS), "the dead one handed back");
    assertTrue(dead.isClosed());
    SlotPoolStats stats = pool.stats();
    assertEquals(1, stats.segmentsDisconnected(), stats.toString());
    // The pool keeps working on the new segment: a released slot is told and reusable.
    pool.release(slot);
    assertEquals(List.of(slot.id()), told.poll(10, TimeUnit.SECONDS));
  }

  @Test
  void aPeerThatDropsEverySegmentAtOnceIsAskedWithGrowingBackoff() throws Exception {
    FakeTicker ticker = new FakeTicker();
    AtomicReference<SlotPool> poolRef = new AtomicReference<>();
    CountDownLatch poolKnown = new CountDownLatch(1);
    SegmentSource dropsAll =
        new SegmentSource() {
          @Override
          public Segment fetch() throws IOException {
            Segment s = local.fetch();
            try {
              poolKnown.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IOException(e);
            }
            poolRef.get().segmentDisconnected(s.id());
            return s;
          }

          @Override
          public void returnSegment(Segment segment) {
            local.returnSegment(segment);
          }
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", dropsAll, recorder)
                .ticker(ticker)
                .initialFetchBackoff(Duration.ofMillis(100))
                .maxFetchBackoff(Duration.ofSeconds(10))
                .build());
    poolRef.set(pool);
    poolKnown.countDown();

    awaitBackingOff(pool, 1);
    ticker.advance(100, TimeUnit.MILLISECONDS);
    awaitBackingOff(pool, 2);
    ticker.advance(100, TimeUnit.MILLISECONDS); // the backoff doubled: 200 ms
    assertEquals(null, local.fetchedQueue.poll(200, TimeUnit.MILLISECONDS), "asked again too soon");
    ticker.advance(100, TimeUnit.MILLISECONDS);
    awaitBackingOff(pool, 3);
    assertEquals(0, pool.stats().segments(), "nothing dead adopted: " + pool.stats());
    assertTrue(pool.stats().segmentsDisconnected() >= 2, pool.stats().toString());
  }

  @Test
  @SuppressWarnings("ThreadPriorityCheck") // yield: let the pool's threads run on 2 cores
  void aSourceKnownToAnswerAgainIsAskedAtOnceNotAfterItsDoubledBackoff() throws Exception {
    FakeTicker ticker = new FakeTicker();
    java.util.concurrent.atomic.AtomicBoolean away =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    java.util.concurrent.atomic.AtomicInteger asked =
        new java.util.concurrent.atomic.AtomicInteger();
    SegmentSource dataNode =
        new SegmentSource() {
          @Override
          public Segment fetch() throws IOException {
            asked.incrementAndGet();
            if (away.get()) {
              throw new IOException("connection refused");
            }
            return local.fetch();
          }

          @Override
          public void returnSegment(Segment segment) {
            local.returnSegment(segment);
          }
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", dataNode, recorder)
                .ticker(ticker)
                .initialFetchBackoff(Duration.ofMillis(100))
                .maxFetchBackoff(Duration.ofSeconds(10))
                .build());
    Thread refill =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("scr-slot-pool-dn1-refill") && t.isAlive())
            .findFirst()
            .orElseThrow();
    // Away for a while: 100, 200, ... 6,400 ms between attempts, then 10 s.
    long waited = 0;
    for (int failures = 1; failures <= 8; failures++) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      // Asked, failed, and parked until its next attempt (it read the ticker after the failure).
      while (pool.stats().segmentFetchFailures() < failures
          || refill.getState() != Thread.State.TIMED_WAITING) {
        assertTrue(System.nanoTime() < deadline, "attempt " + failures + ": " + pool.stats());
        Thread.yield();
      }
      long backoff = Math.min(10_000, 100L << (failures - 1));
      if (failures < 8) {
        ticker.advance(backoff, TimeUnit.MILLISECONDS);
        waited += backoff;
      }
    }
    assertEquals(12_700, waited);
    away.set(false); // the DataNode is back, 10 s before the pool would ask again

    pool.sourceAnswers();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (pool.stats().segments() == 0) {
      assertTrue(
          System.nanoTime() < deadline,
          "told the DataNode answers, the pool asked again at once: " + pool.stats());
      Thread.yield();
    }
    assertEquals(9, asked.get());
    pool.release(pool.allocate());
  }

  /**
   * Waits until the pool has handed back {@code n} dropped segments and its refill thread is parked
   * again (it read the ticker for its next fetch time only after the last one).
   */
  @SuppressWarnings("ThreadPriorityCheck") // yield: let the pool's threads run on 2 cores
  private void awaitBackingOff(SlotPool pool, int n) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    Thread refill =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().equals("scr-slot-pool-dn1-refill") && t.isAlive())
            .findFirst()
            .orElseThrow();
    while (pool.stats().segmentsDisconnected() < n
        || refill.getState() != Thread.State.TIMED_WAITING) {
      assertTrue(System.nanoTime() < deadline, "dropped segment " + n + ": " + pool.stats());
      Thread.yield();
    }
    assertEquals(n, local.fetchCalls(), "asked once per backoff");
    local.fetchedQueue.clear();
  }

  @Test
  void aDisconnectReportedWhenNoFetchIsInFlightIsNotRemembered() throws Exception {
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, recorder)
                .lowWatermark(1) // one segment is enough: no fetch in flight after the first
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());
    Slot slot = pool.allocate();
    // An id the pool never held (say, a late report of a segment returned long ago).
    assertTrue(!pool.segmentDisconnected(ShmId.of(7, 7)), "unknown, and no fetch in flight");
    assertTrue(slot.isValid());
    assertEquals(0, pool.stats().segmentsDisconnected());
  }

  @Test
  void anErrorFromTheSourceDoesNotStopTheRefillThread() throws Exception {
    local.onFetch(
        n -> {
          if (n == 1) {
            throw new OutOfMemoryError("injected: unable to map the segment");
          }
        });
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, recorder)
                .initialFetchBackoff(Duration.ofMillis(1))
                .maxFetchBackoff(Duration.ofMillis(4))
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());

    Slot slot = pool.allocate();

    assertTrue(slot.isValid());
    assertEquals(1, pool.stats().segmentFetchFailures());
    assertTrue(local.fetchCalls() >= 2, "fetched again after the Error");
    assertTrue(pool.stats().toString().length() > 0);
  }

  @Test
  void anErrorFromTheReleaserGivesUpTheSegmentAndMaintenanceGoesOn() throws Exception {
    AtomicBoolean fail = new AtomicBoolean(true);
    SlotReleaser releaser =
        slots -> {
          if (fail.getAndSet(false)) {
            throw new InternalError("injected");
          }
          told.add(new ArrayList<>(slots));
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, releaser)
                .releaseBatchDelay(Duration.ZERO)
                .initialFetchBackoff(Duration.ofMillis(1))
                .maxFetchBackoff(Duration.ofMillis(4))
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());
    Slot first = pool.allocate();
    Segment firstSegment = first.segment();

    pool.release(first); // the maintenance thread tells it: InternalError

    // Nothing of the segment is lost: it is given up as after any failed release, and once empty
    // (the failed slot counts as free again) handed back.
    assertSame(firstSegment, local.returnedQueue.poll(10, TimeUnit.SECONDS));
    Slot next = pool.allocate();
    assertNotSame(firstSegment, next.segment());
    pool.release(next);
    assertEquals(List.of(next.id()), told.poll(10, TimeUnit.SECONDS), "maintenance still runs");
    assertEquals(1, pool.stats().releaseFailures());
  }

  @Test
  void theFirstFetchOnBuildIsMadeOnTheBuildingThreadAndServesTheFirstAllocation() throws Exception {
    List<Thread> fetchers = java.util.Collections.synchronizedList(new ArrayList<>());
    local.onFetch(n -> fetchers.add(Thread.currentThread()));

    SlotPool pool =
        track(SlotPool.newBuilder("dn1", local, recorder).firstFetchOnBuild(true).build());

    assertEquals(1, local.fetchCalls(), "fetched before build() returned");
    assertSame(Thread.currentThread(), fetchers.get(0), "on the thread that built the pool");
    Slot slot = pool.tryAllocate();
    assertTrue(slot != null && slot.isValid(), "allocatable without waiting for any thread");
    assertSame(local.fetched().get(0), slot.segment());
  }

  @Test
  void aFailedFirstFetchOnBuildIsCountedAndTheRefillThreadRetriesIt() throws Exception {
    List<Thread> fetchers = java.util.Collections.synchronizedList(new ArrayList<>());
    local.onFetch(
        n -> {
          fetchers.add(Thread.currentThread());
          if (n == 1) {
            throw new IOException("injected: the DataNode refused shared memory");
          }
        });

    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, recorder)
                .firstFetchOnBuild(true)
                .initialFetchBackoff(Duration.ofMillis(1))
                .maxAllocationWait(Duration.ofSeconds(20))
                .build());
    Slot slot = pool.allocate();

    assertTrue(slot.isValid());
    assertEquals(1, pool.stats().segmentFetchFailures());
    assertSame(Thread.currentThread(), fetchers.get(0));
    assertTrue(fetchers.get(1) != Thread.currentThread(), "retried by the refill thread");
  }

  @Test
  void anInterruptedBuilderCountsNoFailureAndTheRefillThreadFetchesAtOnce() throws Exception {
    local.onFetch(
        n -> {
          if (n == 1) {
            Thread.currentThread().interrupt(); // as a reader interrupted mid-exchange
            throw new java.io.InterruptedIOException("injected: interrupted in the exchange");
          }
        });

    SlotPool pool;
    try {
      pool =
          track(
              SlotPool.newBuilder("dn1", local, recorder)
                  .firstFetchOnBuild(true)
                  .initialFetchBackoff(Duration.ofHours(1)) // a counted failure: no slot in time
                  .maxFetchBackoff(Duration.ofHours(1))
                  .maxAllocationWait(Duration.ofSeconds(20))
                  .build());
    } finally {
      assertTrue(Thread.interrupted(), "the reader's interrupt status is left for it");
    }
    Slot slot = pool.allocate();

    assertTrue(slot.isValid());
    assertEquals(0, pool.stats().segmentFetchFailures(), "the reader's interrupt, not a failure");
    assertTrue(local.fetchCalls() >= 2, "fetched again, by the refill thread");
  }

  @Test
  void lowWatermarkZeroFetchesOnDemand() throws Exception {
    FakeTicker ticker = new FakeTicker(); // never moves: no allocation can time out
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, recorder)
                .lowWatermark(0)
                .ticker(ticker)
                .maxAllocationWait(Duration.ofSeconds(1))
                .build());
    assertEquals(0, local.fetchCalls(), "nothing is fetched ahead with watermark 0");

    Slot slot = pool.allocate();

    assertTrue(slot.isValid());
    assertEquals(1, local.fetchCalls());
  }

  @Test
  void exhaustionIsAStacklessExceptionNamingTheRemedy() throws Exception {
    SlotPool pool =
        track(
            SlotPool.newBuilder("dn1", local, recorder)
                .maxSegments(1)
                .maxAllocationWait(Duration.ZERO)
                .build());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (pool.stats().slotsFree() < 128) {
      assertTrue(System.nanoTime() < deadline, "the first segment never arrived");
      Thread.onSpinWait();
    }
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 128; i++) {
      held.add(pool.allocate());
    }
    SlotPoolExhaustedException e = assertThrows(SlotPoolExhaustedException.class, pool::allocate);
    assertEquals(0, e.getStackTrace().length, "no stack trace per timeout");
    // Without setting names from the caller, the message describes the two settings.
    assertTrue(
        e.getMessage().contains("raise the slot pool's maximum allocation wait (now 0 ms)"),
        e.getMessage());
    assertTrue(e.getMessage().contains("or its low watermark (now 64 slots)"), e.getMessage());
    assertTrue(e.getMessage().contains("0 free"), e.getMessage());
    assertEquals(128, held.size());
  }
}
