package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many threads (more than cores) allocate and release millions of slots with random holds and
 * pauses while segments disconnect and releases fail at random. Invariants: no slot is ever held by
 * two callers, every allocated slot is VALID unless its segment was given up, the counts balance,
 * and every segment is returned and unmapped in the end.
 */
@Timeout(120)
@SuppressWarnings("ThreadPriorityCheck") // yields are the random pauses, not synchronisation
class SlotPoolStressTest {
  private static final int THREADS = 8;
  private static final int PAIRS_PER_THREAD = 400_000;
  private static final int MAX_HELD = 4;

  @Test
  void noSlotIsEverHandedOutTwiceAndEverythingBalances() throws Exception {
    LocalSegmentSource source = new LocalSegmentSource();
    AtomicLong releaseCalls = new AtomicLong();
    SlotReleaser flakyReleaser =
        slots -> {
          if (releaseCalls.incrementAndGet() % 5000 == 0) {
            throw new IOException("injected release failure");
          }
        };
    SlotPool pool =
        SlotPool.newBuilder("stress", source, flakyReleaser)
            .lowWatermark(64)
            .highWatermark(256)
            .releaseBatchDelay(Duration.ofMillis(1))
            .maxAllocationWait(Duration.ofSeconds(30))
            .initialFetchBackoff(Duration.ofMillis(1))
            .maxFetchBackoff(Duration.ofMillis(1))
            .build();

    ConcurrentHashMap<SlotId, Integer> holders = new ConcurrentHashMap<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicLong invalidSeen = new AtomicLong();
    AtomicLong allocated = new AtomicLong();
    AtomicBoolean done = new AtomicBoolean();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int me = t;
      workers.add(
          new Thread(
              () -> {
                try {
                  start.await();
                  run(pool, me, holders, invalidSeen, allocated);
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "stress-" + t));
    }
    Thread chaos =
        new Thread(
            () -> {
              ThreadLocalRandom r = ThreadLocalRandom.current();
              while (!done.get()) {
                List<Segment> fetched = source.fetched();
                Segment victim = fetched.get(r.nextInt(fetched.size()));
                pool.segmentDisconnected(victim.id());
                for (int i = r.nextInt(20_000); i > 0 && !done.get(); i--) {
                  Thread.onSpinWait();
                }
                Thread.yield();
              }
            },
            "stress-chaos");
    workers.forEach(Thread::start);
    start.countDown();
    awaitFirstSegment(source);
    chaos.start();
    for (Thread w : workers) {
      w.join();
    }
    done.set(true);
    chaos.join();
    if (failure.get() != null) {
      throw new AssertionError("a worker failed", failure.get());
    }

    assertEquals(0, holders.size());
    SlotPoolStats stats = awaitQuiet(pool);
    assertEquals((long) THREADS * PAIRS_PER_THREAD, stats.allocations());
    assertEquals(stats.allocations(), stats.releases());
    assertEquals(allocated.get(), stats.allocations());
    assertEquals(0, stats.slotsInUse(), stats.toString());
    assertEquals(0, stats.slotsPendingRelease(), stats.toString());
    assertEquals(0, stats.allocationTimeouts());
    assertTrue(stats.segmentsDisconnected() > 0, "chaos happened: " + stats);
    assertTrue(stats.releaseFailures() > 0, "release failures happened: " + stats);
    assertEquals(
        source.fetched().size() - source.returned().size(), stats.segments(), stats.toString());

    pool.close();
    assertEquals(source.fetched().size(), source.returned().size(), "no segment leaks");
    for (Segment segment : source.fetched()) {
      assertTrue(segment.isClosed(), segment + " unmapped");
    }
  }

  private static void run(
      SlotPool pool,
      int me,
      ConcurrentHashMap<SlotId, Integer> holders,
      AtomicLong invalidSeen,
      AtomicLong allocated)
      throws IOException {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    Slot[] held = new Slot[MAX_HELD];
    int count = 0;
    int allocations = 0;
    while (allocations < PAIRS_PER_THREAD || count > 0) {
      boolean allocate =
          allocations < PAIRS_PER_THREAD && (count == 0 || (count < MAX_HELD && r.nextBoolean()));
      if (allocate) {
        Slot slot = pool.allocate();
        allocations++;
        Integer previous = holders.putIfAbsent(slot.id(), me);
        if (previous != null) {
          throw new AssertionError(slot.id() + " handed to " + me + " while held by " + previous);
        }
        long word = slot.loadVolatile();
        if ((word & ~Slot.VALID_FLAG) != 0) {
          throw new AssertionError("fresh slot " + slot.id() + " word 0x" + Long.toHexString(word));
        }
        if (word == 0) {
          invalidSeen.incrementAndGet(); // its segment was given up right after allocation
        }
        held[count++] = slot;
      } else {
        int i = r.nextInt(count);
        Slot slot = held[i];
        held[i] = held[--count];
        if (!holders.remove(slot.id(), me)) {
          throw new AssertionError(slot.id() + " was not held by " + me);
        }
        if (r.nextInt(50) == 0) {
          pool.releaseUnregistered(slot);
        } else {
          pool.release(slot);
        }
      }
      int pause = r.nextInt(64);
      if (pause == 0) {
        Thread.yield();
      } else if (pause < 4) {
        for (int spin = r.nextInt(500); spin > 0; spin--) {
          Thread.onSpinWait();
        }
      }
    }
    allocated.addAndGet(allocations);
  }

  private static void awaitFirstSegment(LocalSegmentSource source) throws InterruptedException {
    Segment first = source.fetchedQueue.poll(10, TimeUnit.SECONDS);
    if (first == null) {
      throw new AssertionError("no segment fetched");
    }
  }

  /** Waits for the maintenance thread to settle the last releases. */
  private static SlotPoolStats awaitQuiet(SlotPool pool) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    SlotPoolStats stats = pool.stats();
    while (stats.slotsInUse() != 0 || stats.slotsPendingRelease() != 0) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("pool did not settle: " + stats);
      }
      Thread.onSpinWait();
      stats = pool.stats();
    }
    return stats;
  }
}
