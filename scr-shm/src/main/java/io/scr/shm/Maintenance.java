package io.scr.shm;

import io.scr.shm.internal.FailureLog;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The maintenance thread of one {@link SlotPool}: tells pending releases in batches (a batch waits
 * at most the release batch delay; at once while callers wait or the segment is dead), retires
 * surplus segments (the {@link Refiller}'s rule) and returns empty ones, and checks the low
 * watermark.
 *
 * <p><b>Concurrency contract.</b> One thread runs {@link #maintainOnce}; it alone writes {@link
 * PooledSegment#pendingSinceNanos}. Any thread may {@link #signal} it (one CAS and an unpark). The
 * thread lingers one batch delay after its last pending release, then announces {@link #isIdle()}
 * and parks until signalled; it announces before it re-checks for pending releases, so a release
 * that finds it not idle is seen by that re-check, and one that finds it idle signals it. No lock
 * is held here; the segment lock is taken briefly by retiring and returning.
 */
final class Maintenance {
  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);

  /** The thread stays awake at least this long after its last pending release. */
  private static final long MIN_LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private final String name;
  private final SegmentTable table;
  private final ReleaseBatcher batcher;
  private final Refiller refiller;
  private final HandOffQueue<Slot> waiters;
  private final LongSupplier ticker;
  private final long releaseBatchDelayNanos;
  private final int maxReleaseBatch;
  private final long lingerNanos;
  private final Thread thread;
  private final AtomicBoolean wake = new AtomicBoolean();
  private final FailureLog failures = new FailureLog();

  /** Parked with nothing pending: the next first-in-word release must signal. */
  private volatile boolean idle;

  Maintenance(
      SlotPool.Builder b,
      SegmentTable table,
      ReleaseBatcher batcher,
      Refiller refiller,
      HandOffQueue<Slot> waiters) {
    this.name = b.name;
    this.table = table;
    this.batcher = batcher;
    this.refiller = refiller;
    this.waiters = waiters;
    this.ticker = b.ticker;
    this.releaseBatchDelayNanos = b.releaseBatchDelay.toNanos();
    this.maxReleaseBatch = b.maxReleaseBatch;
    this.lingerNanos = Math.max(releaseBatchDelayNanos, MIN_LINGER_NANOS);
    this.thread = b.threadFactory.newThread(this::maintenanceLoop);
    thread.setName("scr-slot-pool-" + name + "-maintenance");
  }

  Thread thread() {
    return thread;
  }

  boolean isIdle() {
    return idle;
  }

  void signal() {
    if (!wake.get() && wake.compareAndSet(false, true)) {
      LockSupport.unpark(thread);
    }
  }

  private void maintenanceLoop() {
    boolean lingered = false;
    while (!table.isClosed()) {
      wake.set(false);
      try {
        long parkNanos = maintainOnce();
        if (failures.inARow() > 0) {
          failures.succeeded(LOG, "Slot pool " + name + " maintenance");
        }
        if (table.isClosed() || wake.get() || parkNanos < 0) {
          continue;
        }
        if (parkNanos > 0) {
          lingered = false;
          LockSupport.parkNanos(this, parkNanos);
          continue;
        }
        if (!lingered) {
          // Nothing pending right now; under steady load more comes soon. Stay awake for one
          // batch delay instead of making the next release pay for waking us.
          lingered = true;
          LockSupport.parkNanos(this, lingerNanos);
          continue;
        }
        lingered = false;
        // Nothing pending: sleep until a release (or anything else) wakes us. Announce it first,
        // then look again, so a release that ran before the announcement is not missed.
        idle = true;
        if (table.pendingSlots() == 0 && !wake.get() && !table.isClosed()) {
          LockSupport.park(this);
        }
        idle = false;
      } catch (RuntimeException | Error e) {
        idle = false;
        // Logged once per streak (then once a minute), not a stack trace every pass.
        long pause =
            failures.failed(
                LOG,
                "Slot pool " + name + " maintenance",
                e,
                ticker.getAsLong(),
                SlotPool.MAX_FAILURE_PAUSE_NANOS);
        LockSupport.parkNanos(this, pause);
      }
    }
  }

  /**
   * One pass. Returns how long to park: 0 = until signalled, negative = run again at once, positive
   * = at most that many nanoseconds (a release batch is maturing, or surplus is on hold).
   */
  private long maintainOnce() {
    PooledSegment[] segments = table.live();
    long now = ticker.getAsLong();
    boolean urgent = waiters.hasWaiters();
    long parkNanos = 0;
    boolean released = false;
    for (PooledSegment entry : segments) {
      int pending = entry.pendingCount();
      if (pending == 0) {
        entry.pendingSinceNanos = SlotPool.NOT_PENDING;
        continue;
      }
      if (entry.pendingSinceNanos == SlotPool.NOT_PENDING) {
        entry.pendingSinceNanos = now;
      }
      long age = now - entry.pendingSinceNanos;
      if (urgent
          || pending >= maxReleaseBatch
          || age >= releaseBatchDelayNanos
          || entry.state() == PooledSegment.DEAD) {
        batcher.releasePending(entry);
        entry.pendingSinceNanos = SlotPool.NOT_PENDING;
        released = true;
      } else {
        parkNanos = shorter(parkNanos, releaseBatchDelayNanos - age);
      }
    }
    parkNanos = shorter(parkNanos, refiller.retireSurplus(now));
    table.returnEmptySegments();
    refiller.checkWatermark();
    return released ? -1 : parkNanos;
  }

  private static long shorter(long parkNanos, long wait) {
    if (wait <= 0) {
      return parkNanos;
    }
    return parkNanos == 0 ? wait : Math.min(parkNanos, wait);
  }
}
