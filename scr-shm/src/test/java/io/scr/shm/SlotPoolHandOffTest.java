package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The release → reuse path when the background thread cannot keep up: callers tell pending releases
 * themselves, waiters are served in order, and the pool grows by the release backlog.
 */
@Timeout(60)
class SlotPoolHandOffTest {
  private final LocalSegmentSource source = new LocalSegmentSource();
  private final CountDownLatch maintenanceGate = new CountDownLatch(1);
  private final List<SlotPool> pools = new ArrayList<>();
  private final List<CountDownLatch> latches = new ArrayList<>();

  /** Threads for the pool whose maintenance thread does not run until the gate opens. */
  private final ThreadFactory starvedMaintenance =
      r -> {
        Thread t =
            new Thread(
                () -> {
                  if (Thread.currentThread().getName().endsWith("-maintenance")) {
                    awaitUninterruptibly(maintenanceGate);
                  }
                  r.run();
                });
        t.setDaemon(true);
        return t;
      };

  @AfterEach
  void tearDown() {
    maintenanceGate.countDown();
    latches.forEach(CountDownLatch::countDown);
    pools.forEach(SlotPool::close);
  }

  private SlotPool track(SlotPool pool) {
    pools.add(pool);
    return pool;
  }

  private CountDownLatch latch() {
    CountDownLatch l = new CountDownLatch(1);
    latches.add(l);
    return l;
  }

  /**
   * The collapse the first design had: 8 threads on 2 cores, and the thread that tells releases
   * gets no CPU at all. Capacity allows (at most 32 held of 128), so no allocation may time out,
   * and no slot may be reused before the releaser was told about it.
   */
  @Test
  void callersTellReleasesThemselvesWhenTheMaintenanceThreadIsStarved() throws Exception {
    Set<SlotId> awaitingTell = ConcurrentHashMap.newKeySet();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    SlotReleaser releaser =
        slots -> {
          for (SlotId id : slots) {
            if (!awaitingTell.remove(id)) {
              failure.compareAndSet(null, new AssertionError(id + " told but never released"));
            }
          }
          // A round trip to the DataNode.
          long end = System.nanoTime() + TimeUnit.MICROSECONDS.toNanos(20);
          while (System.nanoTime() < end) {
            Thread.onSpinWait();
          }
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("starved", source, releaser)
                .maxSegments(1)
                .maxAllocationWait(Duration.ofSeconds(5))
                .threadFactory(starvedMaintenance)
                .build());
    int threads = 8;
    int pairs = 20_000;
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      workers.add(
          new Thread(
              () -> {
                try {
                  start.await();
                  ThreadLocalRandom r = ThreadLocalRandom.current();
                  Slot[] held = new Slot[4];
                  int count = 0;
                  for (int i = 0; i < pairs || count > 0; ) {
                    if (i < pairs && (count == 0 || (count < held.length && r.nextBoolean()))) {
                      Slot slot = pool.allocate();
                      i++;
                      if (awaitingTell.contains(slot.id())) {
                        throw new AssertionError(slot.id() + " reused before the DataNode knew");
                      }
                      if (slot.loadVolatile() != Slot.VALID_FLAG) {
                        throw new AssertionError(slot + " not freshly VALID");
                      }
                      held[count++] = slot;
                    } else {
                      Slot slot = held[--count];
                      awaitingTell.add(slot.id());
                      pool.release(slot);
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "hand-off-" + t));
    }
    workers.forEach(Thread::start);
    start.countDown();
    for (Thread w : workers) {
      w.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("a worker or the releaser failed", failure.get());
    }
    SlotPoolStats stats = pool.stats();
    assertEquals(threads * pairs, stats.allocations(), stats.toString());
    assertEquals(0, stats.allocationTimeouts(), stats.toString());
    assertEquals(1, stats.segments(), "no growth to hide behind: " + stats);
    assertTrue(stats.callerReleaseBatches() > 0, stats.toString());
    assertEquals(
        stats.releaseBatches(), stats.callerReleaseBatches(), "maintenance never ran: " + stats);
    assertEquals(0, stats.slotsInUse(), stats.toString());
  }

  @Test
  void waitersAreServedInArrivalOrderAndAWaiterTellsTheReleaseItself() throws Exception {
    List<String> releaserThreads = new ArrayList<>();
    SlotReleaser releaser =
        slots -> {
          synchronized (releaserThreads) {
            releaserThreads.add(Thread.currentThread().getName());
          }
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("fifo", source, releaser)
                .maxSegments(1)
                .maxAllocationWait(Duration.ofSeconds(20))
                .threadFactory(starvedMaintenance)
                .build());
    await("the first segment", () -> pool.stats().slotsFree() == 128);
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 128; i++) {
      held.add(pool.allocate());
    }
    CompletableFuture<Slot> first = allocateOn("waiter-1", pool);
    awaitParked("waiter-1");
    CompletableFuture<Slot> second = allocateOn("waiter-2", pool);
    awaitParked("waiter-2");

    // A registered release: only a waiter can tell it (maintenance is starved). The release
    // wakes the oldest; the other may get there first, but the slot goes to the oldest either way.
    Slot a = held.remove(0);
    pool.release(a);
    assertSame(a, first.get(10, TimeUnit.SECONDS));
    synchronized (releaserThreads) {
      assertEquals(1, releaserThreads.size(), releaserThreads.toString());
      assertTrue(releaserThreads.get(0).startsWith("waiter-"), releaserThreads.toString());
    }
    assertThrows(TimeoutException.class, () -> second.get(50, TimeUnit.MILLISECONDS));

    // An unregistered release frees at once and goes to the next waiter in line.
    Slot b = held.remove(0);
    pool.releaseUnregistered(b);
    assertSame(b, second.get(10, TimeUnit.SECONDS));
    assertTrue(b.isValid(), "a handed-over slot is VALID again");
    assertEquals(2, pool.stats().allocationsThatWaited());
    held.add(a);
    held.add(b);
    held.forEach(pool::release);
  }

  /**
   * The oldest waiter is stuck (here: in a releaser call that does not return; on a loaded machine:
   * descheduled). The next waiter still tells later releases itself and, in arrival order, gets its
   * slot after the oldest has been handed one.
   */
  @Test
  void aWaiterBehindAStuckOldestWaiterStillGetsASlot() throws Exception {
    CountDownLatch firstInReleaser = new CountDownLatch(1);
    CountDownLatch unblockFirst = latch();
    SlotReleaser releaser =
        slots -> {
          if (Thread.currentThread().getName().equals("waiter-1")) {
            firstInReleaser.countDown();
            awaitUninterruptibly(unblockFirst);
          }
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("stuck", source, releaser)
                .maxSegments(1)
                .maxAllocationWait(Duration.ofSeconds(20))
                .threadFactory(starvedMaintenance)
                .build());
    await("the first segment", () -> pool.stats().slotsFree() == 128);
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 128; i++) {
      held.add(pool.allocate());
    }
    CompletableFuture<Slot> first = allocateOn("waiter-1", pool);
    awaitParked("waiter-1");

    Slot a = held.remove(0);
    pool.release(a); // waiter-1, the only waiter, tells it and hangs in the releaser
    assertTrue(firstInReleaser.await(10, TimeUnit.SECONDS));
    // waiter-2 arrives only now: parked next to waiter-1, it could have told the release first
    // (a waiter that is not the oldest tells pending releases when its park times out), and then
    // nobody would be stuck. waiter-1 stays the oldest waiter while it is in the releaser.
    CompletableFuture<Slot> second = allocateOn("waiter-2", pool);
    awaitParked("waiter-2");
    Slot b = held.remove(0);
    Slot c = held.remove(0);
    pool.release(b);
    pool.release(c);
    // waiter-2 tells b and c: the first goes to waiter-1 (oldest), the second to waiter-2.
    Slot got = second.get(10, TimeUnit.SECONDS);
    assertTrue(got == b || got == c, got.toString());
    assertThrows(TimeoutException.class, () -> first.get(20, TimeUnit.MILLISECONDS));

    unblockFirst.countDown();
    Slot firstGot = first.get(10, TimeUnit.SECONDS);
    assertTrue((firstGot == b || firstGot == c) && firstGot != got, firstGot.toString());
    held.add(got);
    held.add(firstGot);
    held.forEach(pool::release);
    assertEquals(0, pool.stats().allocationTimeouts());
  }

  /**
   * Callers that park while the pool's slots are all on their way back to the DataNode grow the
   * pool by as many segments as that backlog fills (two here), not one at a time.
   */
  @Test
  void parkedCallersGrowThePoolByTheReleaseBacklog() throws Exception {
    CountDownLatch dataNodeStalled = latch();
    AtomicInteger callsInProgress = new AtomicInteger();
    SlotReleaser stalled =
        slots -> {
          callsInProgress.incrementAndGet();
          awaitUninterruptibly(dataNodeStalled);
        };
    SlotPool pool =
        track(
            SlotPool.newBuilder("grow", source, stalled)
                .lowWatermark(136) // fetches below 136 + 64 = 200: two segments
                .maxSegments(8)
                .maxReleaseBatch(1000)
                .maxAllocationWait(Duration.ofSeconds(20))
                .threadFactory(starvedMaintenance)
                .build());
    await("two segments", () -> pool.stats().slotsFree() == 256);
    for (int i = 0; i < 256; i++) {
      pool.release(pool.allocate()); // free + pending stay at 256: no fetch
    }
    // Two callers each take one segment's 128 pending releases and hang in the releaser.
    List<CompletableFuture<Slot>> tellers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      tellers.add(allocateOn("teller-" + i, pool));
      int calls = i + 1;
      await("releases in flight", () -> callsInProgress.get() == calls);
    }
    assertEquals(2, pool.stats().segmentFetches(), "in-flight slots count towards the watermark");

    CompletableFuture<Slot> parked = allocateOn("parked", pool);
    Slot granted = parked.get(10, TimeUnit.SECONDS);
    assertTrue(granted.isValid());
    await("the second growth segment", () -> pool.stats().segments() == 4);
    assertEquals(4, pool.stats().segmentFetches(), "256 in flight = 2 segments: " + pool.stats());

    dataNodeStalled.countDown();
    for (CompletableFuture<Slot> teller : tellers) {
      Slot slot = teller.get(10, TimeUnit.SECONDS);
      assertTrue(slot.isValid());
      pool.release(slot);
    }
    pool.release(granted);
    assertEquals(0, pool.stats().slotsInUse(), pool.stats().toString());
  }

  private static CompletableFuture<Slot> allocateOn(String threadName, SlotPool pool) {
    CompletableFuture<Slot> result = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try {
                result.complete(pool.allocate());
              } catch (IOException | RuntimeException e) {
                result.completeExceptionally(e);
              }
            },
            threadName);
    t.setDaemon(true);
    t.start();
    return result;
  }

  /** Waits until the named thread is parked in the pool (past its spin phase). */
  private static void awaitParked(String threadName) {
    await(
        threadName + " parked",
        () ->
            Thread.getAllStackTraces().entrySet().stream()
                .anyMatch(
                    e ->
                        e.getKey().getName().equals(threadName)
                            && e.getKey().getState() == Thread.State.TIMED_WAITING
                            && e.getValue().length > 0
                            && e.getValue()[0].getClassName().contains("Unsafe")));
  }

  @SuppressWarnings("ThreadPriorityCheck") // yield: let the pool's threads run on 2 cores
  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.yield();
    }
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
