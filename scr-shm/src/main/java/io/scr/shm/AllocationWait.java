package io.scr.shm;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * What an allocation does when the free bitmaps are empty: tell pending releases itself, and
 * otherwise queue in the {@link HandOffQueue} and help until a slot arrives, the wait runs out, the
 * caller is interrupted or the pool closes.
 *
 * <p><b>Ordering: what a caller may rely on.</b> A caller that finds the free bitmaps empty while
 * releases are pending takes <em>every</em> pending release of the first segment that has any (a
 * word at a time with get-and-set, so each release is told once), calls the releaser on its own
 * thread, keeps one slot and frees the rest, handing them first to callers already waiting. Only
 * when nothing is pending (every slot held, or every release already being told by another thread)
 * does it queue. Queued callers are served in arrival order among themselves: whoever frees slots
 * (a release told by any thread, a new segment) hands them to the oldest waiter first and puts them
 * into the free bitmap only when nobody waits. That is not a global first-come order: a caller that
 * has not queued may claim a bit that reached the bitmap (through {@link
 * SlotPool#releaseUnregistered}, a slot a departing waiter passed on with nobody left to take it,
 * or a race with a waiter not yet counted) before a waiter's next re-check, and a caller that tells
 * a batch itself keeps one slot of it without ever queueing. What holds is that every waiter makes
 * progress without depending on any one thread.
 *
 * <p><b>How long a caller can take.</b> A caller returns or throws at most the maximum allocation
 * wait after it entered, plus the release round trip it may have started just before that: no
 * caller <em>starts</em> telling a segment's releases once its wait has run out, but one it started
 * runs to its end, since the taken slots must be told before anyone may reuse them. That round trip
 * is the releaser calls for one segment's pending slots, at most {@code ceil(slots per segment /
 * maximum release batch)} calls (one with the defaults: a stock segment has 128 slots, the batch is
 * 128), each bounded by the releaser's own I/O timeouts (in the client, its DataNode socket connect
 * and read timeouts). With a maximum wait of zero the caller still tells one segment's releases
 * before it gives up. Scheduling delays come on top, as for any wait.
 *
 * <p><b>Concurrency contract.</b> Runs on the allocating caller's thread, any number at once. The
 * wait itself takes no lock; one path under it does: when the releases a caller tells fail, {@link
 * ReleaseBatcher} kills that segment, which holds the pool's segment lock for the invalidation
 * ({@link SegmentTable#kill}: no I/O and no callback under it), so a caller may wait briefly on
 * that lock behind a refill, a retirement or another kill. Each queued caller helps whenever it
 * runs: the oldest takes from the bitmap and tells pending releases for itself; any other serves
 * the queue in arrival order from the bitmap and from releases it tells. So no waiter depends on
 * one particular thread (the oldest may be descheduled) to make progress. A caller that finds a
 * slot itself while queued leaves the queue; if it was filled meanwhile, the found slot goes on to
 * the next waiter (or the bitmap). It spins (yielding) {@value #SPIN_ROUNDS} rounds, then parks;
 * every event that can let it proceed unparks it, and {@link #MAX_PARK_NANOS} is only a safety net.
 */
final class AllocationWait {
  /** Queued callers spin (yielding) this many rounds before they park. */
  private static final int SPIN_ROUNDS = 16;

  /**
   * A parked caller re-checks at least this often. Only a safety net: every event that can let a
   * waiter proceed unparks it (a hand-off, the first pending release of a word, the head leaving,
   * close), so waiters do not poll: a rescan every millisecond by each waiter took CPU from the
   * threads that free slots, on exactly the overloaded machines where callers wait.
   */
  private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final String name;
  private final SegmentTable table;
  private final SlotAllocator allocator;
  private final HandOffQueue<Slot> waiters;
  private final ReleaseBatcher batcher;
  private final Refiller refiller;
  private final PoolCounters counters;
  private final LongSupplier ticker;
  private final long maxAllocationWaitNanos;
  private final int lowWatermark;
  private final String maxAllocationWaitName;
  private final String lowWatermarkName;

  AllocationWait(
      SlotPool.Builder b,
      SegmentTable table,
      SlotAllocator allocator,
      HandOffQueue<Slot> waiters,
      ReleaseBatcher batcher,
      Refiller refiller,
      PoolCounters counters) {
    this.name = b.name;
    this.table = table;
    this.allocator = allocator;
    this.waiters = waiters;
    this.batcher = batcher;
    this.refiller = refiller;
    this.counters = counters;
    this.ticker = b.ticker;
    this.maxAllocationWaitNanos = b.maxAllocationWait.toNanos();
    this.lowWatermark = b.lowWatermark;
    this.maxAllocationWaitName = b.maxAllocationWaitName;
    this.lowWatermarkName = b.lowWatermarkName;
  }

  // Thread.yield is deliberate: with more busy threads than cores (the 8-threads-on-2-cores case),
  // it hands the CPU to whichever thread is about to free slots, before we park.
  @SuppressWarnings("ThreadPriorityCheck")
  Slot allocate() throws IOException {
    if (table.isClosed()) {
      throw closedException();
    }
    long start = ticker.getAsLong();
    long deadline = start + maxAllocationWaitNanos;
    Slot slot = batcher.releaseOnCaller(deadline);
    if (slot == null) {
      slot = table.tryAllocate();
    }
    if (slot != null) {
      return waited(start, slot);
    }
    refiller.checkWatermark();
    if (maxAllocationWaitNanos == 0) {
      counters.allocationTimeouts.incrementAndGet();
      throw exhausted(0);
    }
    HandOffQueue.Waiter<Slot> me = waiters.join();
    if (refiller.refillLevel == 0) {
      // Low watermark 0: nothing is fetched ahead, so this caller's need is the demand. Asked
      // after queueing, so the refill thread sees a waiter and fetches (see needsSegment).
      refiller.requestGrowth();
    }
    int round = 0;
    while (true) {
      if (me.isFilled()) {
        return waited(start, me.item());
      }
      // Re-check after queueing: a thread that freed slots before it saw our count left them in
      // the bitmap.
      if (waiters.isOldest(me)) {
        slot = table.tryAllocate();
        if (slot == null && ticker.getAsLong() - deadline < 0) {
          slot = batcher.releaseOnCaller(deadline);
        }
        if (slot != null) {
          return leaveWith(start, me, slot);
        }
      } else {
        allocator.serveWaitersFromBitmap();
        if (!me.isFilled() && ticker.getAsLong() - deadline < 0) {
          batcher.releaseForWaiters();
        }
        if (me.isFilled()) {
          return waited(start, me.item());
        }
      }
      if (table.isClosed()) {
        if (waiters.leave(me)) {
          throw closedException();
        }
        continue; // filled meanwhile: take it
      }
      long now = ticker.getAsLong();
      long remaining = deadline - now;
      if (remaining <= 0) {
        if (waiters.leave(me)) {
          counters.allocationTimeouts.incrementAndGet();
          throw exhausted(now - start);
        }
        continue;
      }
      if (round < SPIN_ROUNDS) {
        round++;
        Thread.yield();
        continue;
      }
      if (round == SPIN_ROUNDS) {
        round++;
        refiller.requestGrowth();
      }
      LockSupport.parkNanos(this, Math.min(remaining, MAX_PARK_NANOS));
      if (Thread.interrupted()) {
        if (waiters.leave(me)) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException(
              "interrupted while waiting for a shared-memory slot of " + name);
        }
        Thread.currentThread().interrupt(); // filled meanwhile: keep the slot and the flag
      }
    }
  }

  /** A queued caller found a slot itself: leave the queue, or, if handed one meanwhile, pass on. */
  private Slot leaveWith(long start, HandOffQueue.Waiter<Slot> me, Slot found) {
    if (waiters.leave(me)) {
      if (waiters.hasWaiters()) {
        allocator.serveWaitersFromBitmap(); // we may have been the head that others wait behind
      }
      return waited(start, found);
    }
    // Someone handed us a slot while we found another: the found one goes to the next waiter.
    allocator.passOn(found);
    return waited(start, me.item());
  }

  private Slot waited(long start, Slot slot) {
    counters.waited(ticker.getAsLong() - start);
    return slot;
  }

  SlotPoolClosedException closedException() {
    return new SlotPoolClosedException("slot pool " + name + " is closed");
  }

  /**
   * The exception for a caller that waited in vain. Cheap on purpose, because exhaustion comes in
   * bursts (every waiter of an overloaded pool times out at once): no stats snapshot (it copies the
   * wait histogram), only the few counts the message names, no string formatting, and a stackless
   * exception (the caller's stack says nothing about why the pool ran dry).
   */
  private SlotPoolExhaustedException exhausted(long waited) {
    int told = batcher.inFlight();
    int notFreeNorPending = 0;
    int pending = 0;
    PooledSegment[] live = table.live();
    for (PooledSegment entry : live) {
      notFreeNorPending += entry.notFreeNorPendingCount();
      pending += entry.pendingCount();
    }
    StringBuilder m = new StringBuilder(400);
    m.append("No free shared-memory slot for ")
        .append(name)
        .append(" after waiting ")
        .append(TimeUnit.NANOSECONDS.toMicros(waited) / 1000.0)
        .append(" ms (")
        .append(table.freeSlots())
        .append(" free, ")
        .append(Math.max(0, notFreeNorPending - told))
        .append(" in use, ")
        .append(pending + told)
        .append(" awaiting release by the DataNode of which ")
        .append(told)
        .append(" being told, ")
        .append(live.length)
        .append(" segments, ")
        .append(counters.segmentFetchFailures.get())
        .append(" segment fetch failures). The read proceeds without a slot. If this recurs under")
        .append(" normal load, raise ")
        .append(maxAllocationWaitName)
        .append(" (now ")
        .append(TimeUnit.NANOSECONDS.toMillis(maxAllocationWaitNanos))
        .append(" ms) or ")
        .append(lowWatermarkName)
        .append(" (now ")
        .append(lowWatermark)
        .append(" slots), or check the DataNode's segment limit.");
    return new SlotPoolExhaustedException(m.toString(), waited, counters.lastFetchFailure);
  }
}
