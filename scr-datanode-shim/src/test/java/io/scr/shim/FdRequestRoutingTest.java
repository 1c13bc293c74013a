package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** Where fd requests are served: the event loop, the workers for a while after a slow one. */
class FdRequestRoutingTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private final AtomicLong clock = new AtomicLong(-5_000 * MS); // any origin, even negative
  private final LongAdder moves = new LongAdder();
  private final LongAdder kept = new LongAdder();

  /** What the loop thread did during the next slow request. */
  private StallProbe.Cause cause = StallProbe.Cause.DISK;

  private final StallProbe probe =
      new StallProbe() {
        @Override
        void start() {}

        @Override
        Cause slowCause() {
          return cause;
        }
      };

  private FdRequestRouting routing(boolean onLoop) {
    return new FdRequestRouting(onLoop, 5 * MS, 30_000 * MS, clock::get, probe, moves, kept);
  }

  @Test
  void byDefaultFdRequestsAreServedOnTheEventLoop() {
    ShimConfig config = ShimConfig.from(new Configuration(false));
    assertTrue(FdRequestRouting.from(config, new ShimMetrics(), Ticker.SYSTEM).onEventLoop());
    assertEquals(5, config.fdRequestsLoopMaxMs);
    assertEquals(30_000, config.fdRequestsLoopBackoffMs);
  }

  @Test
  void fastRequestsStayOnTheLoop() {
    FdRequestRouting r = routing(true);
    for (int i = 0; i < 100; i++) {
      assertTrue(r.onEventLoop());
      r.servedOnEventLoop(5 * MS, null); // at the bound, not over it
      clock.addAndGet(MS);
    }
    assertEquals(0, moves.sum());
  }

  @Test
  void aRequestSlowOnTheDiskSendsTheOthersToTheWorkersForTheBackoffThenTheyReturn() {
    FdRequestRouting r = routing(true);
    r.startOnEventLoop();
    r.servedOnEventLoop(5 * MS + 1, null);
    assertEquals(1, moves.sum());
    assertFalse(r.onEventLoop());
    clock.addAndGet(30_000 * MS - 1);
    assertFalse(r.onEventLoop(), "still within the backoff");
    clock.addAndGet(1);
    assertTrue(r.onEventLoop(), "the backoff is over");
    assertTrue(r.onEventLoop());
    r.servedOnEventLoop(40 * MS, null);
    assertEquals(2, moves.sum());
    assertFalse(r.onEventLoop());
    assertEquals(0, kept.sum());
  }

  @Test
  void aRequestSlowWithoutReadingStorageLeavesTheRequestsOnTheLoop() {
    FdRequestRouting r = routing(true);
    StallProbe.Cause[] notTheDisk = {
      StallProbe.Cause.WAITED, StallProbe.Cause.PREEMPTED, StallProbe.Cause.GC, StallProbe.Cause.RAN
    };
    for (StallProbe.Cause c : notTheDisk) {
      cause = c;
      r.startOnEventLoop();
      r.servedOnEventLoop(40 * MS, null);
      assertTrue(r.onEventLoop(), "a loop thread that did not read storage (" + c + ") serves on");
    }
    assertEquals(0, moves.sum());
    assertEquals(4, kept.sum());
    cause = StallProbe.Cause.WAITED; // but a wait of over 10x the bound (a lock held that long)
    r.servedOnEventLoop(50 * MS, null);
    assertTrue(r.onEventLoop(), "10x the bound: still a lock a worker would wait for too");
    r.servedOnEventLoop(50 * MS + 1, null);
    assertFalse(r.onEventLoop(), "longer: the loop's other connections must not wait on it");
    assertEquals(1, moves.sum());
    clock.addAndGet(30_000 * MS);
    assertTrue(r.onEventLoop());
    cause = StallProbe.Cause.UNKNOWN; // a wait this host cannot explain: as if it were the disk
    r.servedOnEventLoop(40 * MS, null);
    assertFalse(r.onEventLoop());
    assertEquals(2, moves.sum());
  }

  @Test
  void switchedOffEveryRequestGoesToTheWorkers() {
    FdRequestRouting r = routing(false);
    assertFalse(r.onEventLoop());
    clock.addAndGet(3_600_000 * MS);
    assertFalse(r.onEventLoop());
  }
}
