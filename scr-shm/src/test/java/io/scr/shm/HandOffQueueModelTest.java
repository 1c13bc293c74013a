package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.jetbrains.lincheck.Lincheck;
import org.junit.jupiter.api.Test;

/**
 * Model checking of the waiter hand-off ({@link HandOffQueue}): Lincheck runs each block many
 * times, exploring the interleavings of its threads at every shared-memory access and park/unpark,
 * and fails with the offending schedule when an assertion fails or a thread parks forever (a lost
 * wake-up shows as a deadlock). Bounded: a few thousand schedules per test, a few seconds each.
 */
class HandOffQueueModelTest {
  private static final int INVOCATIONS = 1_000;

  /**
   * Two offers against two waiters that give up at once if not filled: each item ends with exactly
   * one party (its offerer, when {@code offer} said false, or exactly one waiter), no waiter gets
   * two, and nothing stays counted as waiting.
   */
  @Test
  void everyItemEndsWithExactlyOneParty() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          HandOffQueue<Integer> q = new HandOffQueue<>();
          Integer[] got = new Integer[2];
          boolean[] offered = new boolean[3];
          Thread w0 = new Thread(() -> got[0] = waitOnce(q));
          Thread w1 = new Thread(() -> got[1] = waitOnce(q));
          Thread o1 = new Thread(() -> offered[1] = q.offer(1));
          Thread o2 = new Thread(() -> offered[2] = q.offer(2));
          startAndJoin(w0, w1, o1, o2);
          for (int item = 1; item <= 2; item++) {
            int receivers =
                (item == nullToZero(got[0]) ? 1 : 0) + (item == nullToZero(got[1]) ? 1 : 0);
            assertEquals(offered[item] ? 1 : 0, receivers, "item " + item + " holders");
          }
          assertFalse(q.hasWaiters(), "nobody is left counted as waiting");
        });
  }

  /**
   * FIFO and cancellation: A joins before B; an offer races A leaving. The item goes to A unless A
   * left first, and then to B; never to B while A waits, never to a departed A, never lost.
   */
  @Test
  void oldestWaitingWaiterIsFilledFirst() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          HandOffQueue<Integer> q = new HandOffQueue<>();
          HandOffQueue.Waiter<Integer> a = q.join();
          HandOffQueue.Waiter<Integer> b = q.join();
          boolean[] result = new boolean[2];
          Thread offerer = new Thread(() -> result[0] = q.offer(7));
          Thread leaver = new Thread(() -> result[1] = q.leave(a));
          startAndJoin(offerer, leaver);
          assertTrue(result[0], "B waits throughout, so the offer always finds a waiter");
          if (result[1]) {
            assertFalse(a.isFilled(), "a departed waiter is never filled");
            assertTrue(b.isFilled(), "A left first: the item goes to B");
            assertEquals(7, b.item());
          } else {
            assertTrue(a.isFilled(), "A could not leave: it was filled");
            assertEquals(7, a.item());
            assertFalse(b.isFilled(), "B is not filled while the older A waits");
          }
        });
  }

  /**
   * The wake-ups the pool relies on, part 1: a waiter parked behind the head is woken when the head
   * leaves (it is now the oldest and must help itself). Parking here is {@link Permits}: exact
   * park/unpark semantics without spurious returns, so a missing wake-up leaves the thread waiting
   * forever, which Lincheck reports as a hang with its schedule.
   */
  @Test
  void waiterBehindTheHeadIsWokenWhenTheHeadLeaves() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          Permits permits = new Permits();
          HandOffQueue<Integer> q = new HandOffQueue<>(permits::unpark);
          HandOffQueue.Waiter<Integer> head = q.join();
          boolean[] becameOldest = new boolean[1];
          Thread next =
              new Thread(
                  () -> {
                    HandOffQueue.Waiter<Integer> me = q.join();
                    // As AllocationWait: wait until filled or the oldest (then help itself).
                    while (!q.isOldest(me)) {
                      permits.park();
                    }
                    becameOldest[0] = q.leave(me);
                  });
          permits.register(next);
          Thread headLeaves = new Thread(() -> q.leave(head));
          startAndJoin(next, headLeaves);
          assertTrue(becameOldest[0], "the waiter behind the head went on as the oldest");
          assertFalse(q.hasWaiters());
        });
  }

  /** Part 2: a waiter parked until filled is woken by the offer that fills it. */
  @Test
  void offerWakesTheWaiterItFills() {
    Lincheck.runConcurrentTest(
        INVOCATIONS,
        () -> {
          Permits permits = new Permits();
          HandOffQueue<Integer> q = new HandOffQueue<>(permits::unpark);
          Integer[] got = new Integer[1];
          Thread waiter =
              new Thread(
                  () -> {
                    HandOffQueue.Waiter<Integer> me = q.join();
                    while (!me.isFilled()) {
                      permits.park();
                    }
                    got[0] = me.item();
                  });
          permits.register(waiter);
          Thread offerer =
              new Thread(
                  () -> {
                    while (!q.offer(5)) {
                      Thread.yield(); // until the waiter has joined
                    }
                  });
          startAndJoin(waiter, offerer);
          assertEquals(5, got[0]);
          assertFalse(q.hasWaiters());
        });
  }

  /**
   * Park/unpark for one registered thread, without the spurious returns {@link LockSupport#park} is
   * allowed (and that Lincheck therefore explores): {@link #park} returns only once a permit was
   * given, and consumes it.
   */
  private static final class Permits {
    private volatile Thread owner;
    private final AtomicBoolean permit = new AtomicBoolean();

    void register(Thread t) {
      owner = t;
    }

    void unpark(Thread t) {
      if (t == owner) {
        permit.set(true);
      }
    }

    void park() {
      while (!permit.compareAndSet(true, false)) {
        Thread.onSpinWait();
      }
    }
  }

  /** A waiter that gives up at once unless filled: its item, or null if it left empty-handed. */
  private static Integer waitOnce(HandOffQueue<Integer> q) {
    HandOffQueue.Waiter<Integer> me = q.join();
    if (me.isFilled() || !q.leave(me)) {
      return me.item();
    }
    return null;
  }

  private static int nullToZero(Integer i) {
    return i == null ? 0 : i;
  }

  private static void startAndJoin(Thread... threads) {
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
