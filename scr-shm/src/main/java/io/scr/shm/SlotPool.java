package io.scr.shm;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.shm.internal.FailureLog;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The slots of one DataNode endpoint: segments fetched ahead of need, lock-free allocation,
 * releases batched off the reader's thread.
 *
 * <p><b>Steady state.</b> {@link #allocate()} claims a bit in a segment's free bitmap with one CAS
 * and makes the slot VALID with one volatile store; it takes no lock, does no I/O and allocates
 * nothing. {@link #release(Slot)} sets a bit in the segment's pending bitmap with one atomic OR. A
 * released slot becomes reusable only after the DataNode has been told (the {@link SlotReleaser}
 * returned), because the DataNode rejects a slot it still has registered. The <em>maintenance</em>
 * thread tells it in batches (a batch waits at most {@link Builder#releaseBatchDelay}); the
 * <em>refill</em> thread calls {@link SegmentSource#fetch()} whenever free, pending and in-flight
 * slots together fall below the low watermark, so readers never wait for a segment to load while
 * slots are free.
 *
 * <p><b>Empty pool: nobody waits for a thread that has no CPU.</b> A caller that finds the free
 * bitmap empty while releases are pending takes a word of pending bits itself (atomically, so each
 * release is told once), calls the releaser on its own thread, keeps one slot and frees the rest,
 * handing them first to callers already waiting. Only when nothing is pending (every slot held, or
 * every release already being told by another thread) does it queue: waiters are served strictly in
 * arrival order by whoever frees slots next (a release told by any thread, a new segment), and
 * slots go to the free bitmap only when nobody waits, so a waiter cannot lose freed slots to
 * callers that arrive later. A caller that has to park asks the refill thread to grow the pool by
 * as many segments as the release backlog (pending plus in flight) fills, up to {@link
 * Builder#maxSegments}: a backlog that outruns the pool means the release round trip is too slow
 * for the allocation rate. A queued caller gives up after {@link Builder#maxAllocationWait} with
 * {@link SlotPoolExhaustedException}.
 *
 * <p><b>Concurrency contract.</b> Allocation and release are lock-free; neither touches a lock on
 * the fast path. {@code structureLock} guards segment membership and state transitions (adopting,
 * retiring, killing, returning); it is taken by the background threads, {@link
 * #segmentDisconnected}, {@link #close()} and by a caller whose releaser call failed. Allocators
 * read the allocation array without a lock and may see a stale one; {@link PooledSegment#tryClaim}
 * handles that race. The waiter queue is a lock-free FIFO; a waiter's state moves from WAITING to
 * FILLED (by the thread that hands it a slot) or CANCELLED (by the waiter: timeout, interrupt,
 * close) by CAS, so a slot is handed to a waiter at most once and never to a departed one. The
 * allocation hint ({@code allocHint}) is a plain field: a stale value only changes where the next
 * scan starts. No lock is held while calling the source or the releaser; the releaser may be called
 * by several threads at once, each with different slots.
 *
 * <p><b>Shrinking and failure.</b> A wholly free segment is retired and returned to the source
 * while the pool holds more than {@link Builder#highWatermark} free slots (and keeps at least the
 * low watermark), except within {@value #SURPLUS_HOLD_MILLIS} ms of a caller waiting on a release
 * backlog (so growth and shrinking do not chase each other). {@link #segmentDisconnected} (the
 * DataNode closed the segment's socket) or a failed release invalidates every slot of the segment
 * at once; holders see VALID clear, and the segment is returned once they have all released. A
 * disconnect reported while its segment is still being fetched (not yet adopted) is remembered
 * until the fetch ends, and that segment is handed back instead of adopted. Fetch failures back off
 * exponentially. An {@code Error} in a background thread (from the source, the releaser or the
 * pool's own bookkeeping) is logged once per streak and the thread keeps running; an {@code Error}
 * from the releaser gives up the segment like any failed release.
 *
 * <p><b>Lifecycle.</b> {@link Builder#build()} starts both threads, which immediately fetch up to
 * the low watermark. {@link #close()} stops them, invalidates every slot, returns every empty
 * segment at once and every other segment when its last slot is released (on the releasing thread).
 * No remote releases are sent after close: returning a segment makes the DataNode drop all its
 * slots.
 */
public final class SlotPool implements AutoCloseable {
  /** Configuration key that raises the allocation wait (named in exceptions; see docs/shm.md). */
  public static final String MAX_ALLOCATION_WAIT_KEY = "scr.client.slot-pool.max-allocation-wait";

  /** Configuration key for the low watermark (named in exceptions; see docs/shm.md). */
  public static final String LOW_WATERMARK_KEY = "scr.client.slot-pool.low-watermark";

  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);
  private static final PooledSegment[] NO_SEGMENTS = new PooledSegment[0];
  static final long NOT_PENDING = Long.MIN_VALUE;

  /** Queued callers spin (yielding) this many rounds before they park. */
  private static final int SPIN_ROUNDS = 16;

  /**
   * A parked caller re-checks at least this often. Only a safety net: every event that can let a
   * waiter proceed unparks it (a hand-off, the first pending release of a word, the head leaving,
   * close), so a waiter does not poll; before issue 14 it rescanned every 1 ms.
   */
  private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  /** A background thread that keeps failing waits at most this long before it tries again. */
  private static final long MAX_FAILURE_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** The maintenance thread stays awake at least this long after its last pending release. */
  private static final long MIN_LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** No surplus is returned within this long of a caller waiting on a release backlog. */
  static final long SURPLUS_HOLD_MILLIS = 1000;

  private static final long SURPLUS_HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(SURPLUS_HOLD_MILLIS);

  /** Slots in a stock segment; the growth estimate until the first segment arrives. */
  private static final int STOCK_SLOTS_PER_SEGMENT = 128;

  /** Slots per word of a free bitmap: at most this many allocations between two level checks. */
  private static final int SLOTS_PER_CHECK = 64;

  private final String name;
  private final SegmentSource source;
  private final SlotReleaser releaser;
  private final LongSupplier ticker;
  private final int lowWatermark;

  /**
   * Free + pending + in-flight below which the refill thread fetches: the low watermark plus one
   * check interval. Allocators check the level only when they empty a 64-slot word of a segment's
   * free bitmap (a per-allocation scan would put every segment's bitmap on the hot path), so the
   * level can drop by up to 64 between two checks. Fetching at {@code lowWatermark} alone let a
   * 128-slot segment read 64 (not below) at one check and 0 at the next: the allocation after every
   * segment's last slot waited for a whole fetch (ReplicaOpenBenchmark, up to 50 ms). Zero when the
   * low watermark is zero (fetch on demand only).
   */
  private final int refillLevel;

  private final int highWatermark;
  private final int maxSegments;
  private final long maxAllocationWaitNanos;
  private final long releaseBatchDelayNanos;
  private final int maxReleaseBatch;
  private final long lingerNanos;
  private final long initialBackoffNanos;
  private final long maxBackoffNanos;

  /** Segments allocation scans; copy-on-write under structureLock. */
  private volatile PooledSegment[] active = NO_SEGMENTS;

  /** Every segment not yet returned; copy-on-write under structureLock, for lock-free scans. */
  private volatile PooledSegment[] live = NO_SEGMENTS;

  /**
   * Index in {@code active} where allocation starts scanning: the lowest segment that may have free
   * slots (allocation packs low, so surplus segments at the end empty out and can be returned).
   * Plain on purpose: racy reads and writes only move the start of a scan that wraps around;
   * written only when it changes, so the fast path does not write a shared line.
   */
  private int allocHint;

  private final ReentrantLock structureLock = new ReentrantLock();

  @GuardedBy("structureLock")
  private final Map<ShmId, PooledSegment> byId = new HashMap<>();

  /**
   * A fetch is between {@link SegmentSource#fetch()} and {@link #adopt}: a disconnect of an unknown
   * segment may be of the segment in flight (a source that watches its peer from {@code fetch}).
   */
  @GuardedBy("structureLock")
  private boolean fetching;

  /**
   * Segments reported disconnected while {@link #fetching} and not in the pool: the fetch in flight
   * is not adopted if it is one of them. Cleared when the fetch ends, so it stays tiny.
   */
  @GuardedBy("structureLock")
  private final List<ShmId> disconnectedWhileFetching = new ArrayList<>(1);

  /** Callers waiting for a slot, oldest first; may hold departed (cancelled) entries. */
  private final ConcurrentLinkedQueue<Waiter> waiterQueue = new ConcurrentLinkedQueue<>();

  /** Waiters in state WAITING (may dip below zero for an instant; only {@code > 0} is tested). */
  private final AtomicInteger waiting = new AtomicInteger();

  /** Slots taken from pending bitmaps whose release is being told: neither free nor pending. */
  private final AtomicInteger inFlight = new AtomicInteger();

  /** Segments the refill thread should add because callers waited on a release backlog. */
  private final AtomicInteger segmentsWanted = new AtomicInteger();

  /** When a caller last parked while releases were pending or in flight; NOT_PENDING if never. */
  private volatile long lastBacklogWaitNanos = NOT_PENDING;

  /** Slots per segment of the last adopted segment: converts a backlog into segments. */
  private volatile int slotsPerSegment = STOCK_SLOTS_PER_SEGMENT;

  private final Thread maintenanceThread;
  private final Thread refillThread;
  private final AtomicBoolean maintenanceWake = new AtomicBoolean();
  private final AtomicBoolean refillWake = new AtomicBoolean();

  /** The maintenance thread is parked with nothing pending: the next release must wake it. */
  private volatile boolean maintenanceIdle;

  private volatile boolean closed;

  private final LongAdder allocations = new LongAdder();
  private final LongAdder releases = new LongAdder();
  private final AtomicLong allocationsThatWaited = new AtomicLong();
  private final AtomicLong allocationTimeouts = new AtomicLong();
  private final AtomicLong segmentFetches = new AtomicLong();
  private final AtomicLong segmentFetchFailures = new AtomicLong();
  private final AtomicLong segmentsReturned = new AtomicLong();
  private final AtomicLong segmentsDisconnected = new AtomicLong();
  private final AtomicLong releaseBatches = new AtomicLong();
  private final AtomicLong callerReleaseBatches = new AtomicLong();
  private final AtomicLong releaseFailures = new AtomicLong();
  private final Histogram waitNanos = new ConcurrentHistogram(3);
  private volatile Throwable lastFetchFailure;
  private final FailureLog refillFailures = new FailureLog();
  private final FailureLog maintenanceFailures = new FailureLog();

  private SlotPool(Builder b) {
    this.name = b.name;
    this.source = b.source;
    this.releaser = b.releaser;
    this.ticker = b.ticker;
    this.lowWatermark = b.lowWatermark;
    this.refillLevel = b.lowWatermark == 0 ? 0 : b.lowWatermark + SLOTS_PER_CHECK;
    this.highWatermark = b.highWatermark;
    this.maxSegments = b.maxSegments;
    this.maxAllocationWaitNanos = b.maxAllocationWait.toNanos();
    this.releaseBatchDelayNanos = b.releaseBatchDelay.toNanos();
    this.maxReleaseBatch = b.maxReleaseBatch;
    this.lingerNanos = Math.max(releaseBatchDelayNanos, MIN_LINGER_NANOS);
    this.initialBackoffNanos = b.initialFetchBackoff.toNanos();
    this.maxBackoffNanos = b.maxFetchBackoff.toNanos();
    this.maintenanceThread = b.threadFactory.newThread(this::maintenanceLoop);
    this.refillThread = b.threadFactory.newThread(this::refillLoop);
    maintenanceThread.setName("scr-slot-pool-" + name + "-maintenance");
    refillThread.setName("scr-slot-pool-" + name + "-refill");
  }

  /**
   * A builder for the pool of one DataNode endpoint.
   *
   * @param name the endpoint (used in thread names, logs and exceptions)
   * @param source where segments come from
   * @param releaser how released slots are reported to the DataNode
   */
  public static Builder newBuilder(String name, SegmentSource source, SlotReleaser releaser) {
    return new Builder(name, source, releaser);
  }

  private void start() {
    maintenanceThread.start();
    refillThread.start();
  }

  /** The pool's name (its DataNode endpoint). */
  public String name() {
    return name;
  }

  // ------------------------------------------------------------------ allocation and release

  /**
   * A free slot, VALID set and everything else clear. Lock-free and I/O-free while the pool has
   * free slots. When it has none but releases are pending, this thread tells the DataNode about a
   * batch of them (one {@link SlotReleaser} call) and takes one; when nothing is pending it waits
   * at most the configured maximum allocation wait for a slot to be freed or a segment to arrive.
   *
   * @throws SlotPoolExhaustedException when no slot became free in time (the reader proceeds
   *     without one)
   * @throws SlotPoolClosedException when the pool is closed
   * @throws InterruptedIOException when interrupted while waiting (interrupt status restored)
   */
  public Slot allocate() throws IOException {
    Slot slot = tryAllocate();
    if (slot == null) {
      return allocateSlow();
    }
    allocations.increment();
    return slot;
  }

  /** One first-fit scan from the hint, wrapping around; null when no active segment has a slot. */
  private Slot tryAllocate() {
    PooledSegment[] segments = active;
    int n = segments.length;
    int start = allocHint;
    if (start >= n) {
      start = 0;
    }
    int i = start;
    for (int k = 0; k < n; k++) {
      Slot slot = segments[i].tryClaim();
      if (slot != null) {
        if (i != start) {
          allocHint = i;
        }
        return slot;
      }
      if (++i == n) {
        i = 0;
      }
    }
    return null;
  }

  /** {@code entry} has free slots again: start the next scan there if it is lower. */
  private void lowerHint(PooledSegment entry) {
    PooledSegment[] segments = active;
    int hint = allocHint;
    for (int i = 0; i < segments.length && i < hint; i++) {
      if (segments[i] == entry) {
        allocHint = i;
        return;
      }
    }
  }

  // Thread.yield is deliberate: with more busy threads than cores (the 8-threads-on-2-cores case),
  // it hands the CPU to whichever thread is about to free slots, before we park.
  @SuppressWarnings("ThreadPriorityCheck")
  private Slot allocateSlow() throws IOException {
    if (closed) {
      throw closedException();
    }
    long start = ticker.getAsLong();
    Slot slot = releaseOnCaller();
    if (slot == null) {
      slot = tryAllocate();
    }
    if (slot != null) {
      return waited(start, slot);
    }
    checkWatermark();
    if (maxAllocationWaitNanos == 0) {
      allocationTimeouts.incrementAndGet();
      throw exhausted(0);
    }
    Waiter me = new Waiter(Thread.currentThread());
    // Queue first, count second: a thread that sees the count also finds the entry.
    waiterQueue.add(me);
    waiting.incrementAndGet();
    if (refillLevel == 0) {
      // Low watermark 0: nothing is fetched ahead, so this caller's need is the demand. Asked
      // after queueing, so the refill thread sees a waiter and fetches (see needsSegment).
      requestGrowth();
    }
    long deadline = start + maxAllocationWaitNanos;
    int round = 0;
    while (true) {
      if (me.isFilled()) {
        return waited(start, me.slot);
      }
      // Re-check after queueing: a thread that freed slots before it saw our count left them in
      // the bitmap. The oldest waiter takes from the bitmap and tells pending releases for
      // itself; any other waiter helps too, but hands what it frees out in arrival order, so no
      // waiter depends on one particular thread (the oldest may be descheduled) to make progress.
      if (waiterQueue.peek() == me) {
        slot = tryAllocate();
        if (slot == null) {
          slot = releaseOnCaller();
        }
        if (slot != null) {
          return leaveWith(start, me, slot);
        }
      } else {
        serveWaitersFromBitmap();
        if (!me.isFilled()) {
          releaseForWaiters();
        }
        if (me.isFilled()) {
          return waited(start, me.slot);
        }
      }
      if (closed) {
        if (leave(me)) {
          throw closedException();
        }
        continue; // filled meanwhile: take it
      }
      long now = ticker.getAsLong();
      long remaining = deadline - now;
      if (remaining <= 0) {
        if (leave(me)) {
          allocationTimeouts.incrementAndGet();
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
        requestGrowth();
      }
      LockSupport.parkNanos(this, Math.min(remaining, MAX_PARK_NANOS));
      if (Thread.interrupted()) {
        if (leave(me)) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException(
              "interrupted while waiting for a shared-memory slot of " + name);
        }
        Thread.currentThread().interrupt(); // filled meanwhile: keep the slot and the flag
      }
    }
  }

  /** Leaves the queue; false when a slot was handed over first (then it must be taken). */
  private boolean leave(Waiter me) {
    if (!me.cancel()) {
      return false;
    }
    waiting.decrementAndGet();
    waiterQueue.remove(me);
    if (waiting.get() > 0) {
      // We may have been the head: the next one now tells pending releases itself, so wake it
      // rather than leave it to its safety-net timeout.
      unparkFirstWaiting();
    }
    return true;
  }

  /** Wakes the oldest waiter still waiting (the queue may start with departed entries). */
  private void unparkFirstWaiting() {
    for (Waiter w : waiterQueue) {
      if (w.isWaiting()) {
        LockSupport.unpark(w.thread);
        return;
      }
    }
  }

  /** A queued caller found a slot itself: leave the queue, or, if handed one meanwhile, pass on. */
  private Slot leaveWith(long start, Waiter me, Slot found) {
    if (leave(me)) {
      if (waiting.get() > 0) {
        serveWaitersFromBitmap(); // we may have been the head that others wait behind
      }
      return waited(start, found);
    }
    // Someone handed us a slot while we found another: the found one goes to the next waiter.
    passOn(found);
    return waited(start, me.slot);
  }

  private Slot waited(long start, Slot slot) {
    allocations.increment();
    allocationsThatWaited.incrementAndGet();
    waitNanos.recordValue(Math.max(0, ticker.getAsLong() - start));
    return slot;
  }

  /**
   * The exception for a caller that waited in vain. Cheap on purpose, because exhaustion comes in
   * bursts (every waiter of an overloaded pool times out at once): no {@link #stats()} snapshot (it
   * copies the wait histogram), only the few counts the message names, no string formatting, and a
   * stackless exception (the caller's stack says nothing about why the pool ran dry).
   */
  private SlotPoolExhaustedException exhausted(long waited) {
    int told = Math.max(0, inFlight.get());
    int notFreeNorPending = 0;
    int pending = 0;
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
        .append(freeSlots())
        .append(" free, ")
        .append(Math.max(0, notFreeNorPending - told))
        .append(" in use, ")
        .append(pending + told)
        .append(" awaiting release by the DataNode of which ")
        .append(told)
        .append(" being told, ")
        .append(live.length)
        .append(" segments, ")
        .append(segmentFetchFailures.get())
        .append(" segment fetch failures). The read proceeds without a slot. If this recurs under")
        .append(" normal load, raise ")
        .append(MAX_ALLOCATION_WAIT_KEY)
        .append(" (now ")
        .append(TimeUnit.NANOSECONDS.toMillis(maxAllocationWaitNanos))
        .append(" ms) or ")
        .append(LOW_WATERMARK_KEY)
        .append(" (now ")
        .append(lowWatermark)
        .append(" slots), or check the DataNode's segment limit.");
    return new SlotPoolExhaustedException(m.toString(), waited, lastFetchFailure);
  }

  private SlotPoolClosedException closedException() {
    return new SlotPoolClosedException("slot pool " + name + " is closed");
  }

  /**
   * Releases a slot the DataNode registered (it was sent with a REQUEST_SHORT_CIRCUIT_FDS that
   * succeeded). O(1) on the caller's thread: one atomic OR, and no I/O; the DataNode is told later
   * (by the maintenance thread, or by an allocating caller that finds the pool otherwise empty) and
   * the slot is reusable after that. The caller must not touch the slot afterwards.
   *
   * @throws IllegalArgumentException when the slot is not from this pool
   * @throws IllegalStateException when the slot is detected as released twice
   */
  public void release(Slot slot) {
    PooledSegment entry = entryOf(slot);
    boolean firstInWord = entry.markPending(slot.index());
    releases.increment();
    if (closed) {
      processAfterClose();
    } else if (firstInWord) {
      onFirstPending();
    }
  }

  /** The first release of a word since it was last taken: make sure someone will tell it. */
  private void onFirstPending() {
    if (maintenanceIdle) {
      signalMaintenance();
    }
    if (waiting.get() > 0) {
      // The oldest waiter tells this release itself rather than wait for a background thread.
      // The first one still waiting: the head may be a departed entry not yet removed.
      unparkFirstWaiting();
    }
  }

  /**
   * Releases a slot the DataNode never registered (the request that carried it failed before the
   * DataNode accepted it): clears VALID and frees it at once, with no message to the DataNode, as
   * stock {@code ShortCircuitCache.freeSlot}. The caller must not touch the slot afterwards.
   */
  public void releaseUnregistered(Slot slot) {
    PooledSegment entry = entryOf(slot);
    slot.makeInvalid();
    entry.freeDirectly(slot.index());
    releases.increment();
    if (closed) {
      processAfterClose();
      return;
    }
    if (waiting.get() > 0) {
      serveWaitersFromBitmap();
    }
    if (entry.state() != PooledSegment.ACTIVE) {
      signalMaintenance();
    }
  }

  private PooledSegment entryOf(Slot slot) {
    PooledSegment entry = slot.segment().poolEntry;
    if (entry == null || entry.pool != this) {
      throw new IllegalArgumentException("slot " + slot.id() + " does not belong to pool " + name);
    }
    return entry;
  }

  /**
   * The DataNode side of segment {@code id} is gone (its socket closed): every slot of it is
   * invalidated at once, nothing more is allocated from it, and it is returned to the source once
   * every holder has released. Called by the source, from any thread.
   *
   * <p>A disconnect may race the fetch of its segment: a source that watches the peer from {@link
   * SegmentSource#fetch()} can report it before the pool has adopted the segment. Such a report is
   * remembered while the fetch is in flight, and the segment is then handed back instead of adopted
   * (counted as disconnected) and another one fetched; without that, the segment would become
   * allocatable while dead and every replica opened with its slots refused.
   *
   * @return false when the pool does not hold that segment (already returned, or never fetched) and
   *     no fetch is in flight
   */
  public boolean segmentDisconnected(ShmId id) {
    structureLock.lock();
    try {
      PooledSegment entry = byId.get(id);
      if (entry == null) {
        if (fetching && !closed) {
          disconnectedWhileFetching.add(id);
          LOG.debug("Segment {} of {} disconnected before the pool adopted it", id, name);
          return true;
        }
        return false;
      }
      if (!kill(entry)) {
        return false;
      }
    } finally {
      structureLock.unlock();
    }
    segmentsDisconnected.incrementAndGet();
    LOG.info("Segment {} of {} disconnected; its slots are invalid", id, name);
    signalMaintenance();
    signalRefill();
    return true;
  }

  /** ACTIVE/RETIRED → DEAD, out of allocation, every slot invalid. */
  @GuardedBy("structureLock")
  private boolean kill(PooledSegment entry) {
    if (!entry.transition(PooledSegment.ACTIVE, PooledSegment.DEAD)
        && !entry.transition(PooledSegment.RETIRED, PooledSegment.DEAD)) {
      return false;
    }
    active = without(active, entry);
    // The segment cannot be returned (and unmapped) while we hold structureLock.
    entry.segment.invalidateAll();
    return true;
  }

  // ------------------------------------------------------------------ telling releases

  /**
   * The pool has no free slot: take the pending releases of the first active segment that has any,
   * tell the DataNode on this thread, keep one slot and free the rest (waiters first). Null when
   * nothing was pending, the release failed, or the segment died meanwhile.
   */
  private Slot releaseOnCaller() {
    PooledSegment[] segments = active;
    for (PooledSegment entry : segments) {
      if (entry.hasPending()) {
        Slot slot = tellAndFree(entry, -1, true, true);
        if (slot != null) {
          return slot;
        }
      }
    }
    return null;
  }

  /**
   * A waiter that is not the oldest: tells the pending releases of the first active segment that
   * has any, and hands the slots to the waiters in arrival order (itself included, in its turn).
   */
  private void releaseForWaiters() {
    PooledSegment[] segments = active;
    for (PooledSegment entry : segments) {
      if (entry.hasPending()) {
        tellAndFree(entry, -1, true, false);
        return;
      }
    }
  }

  /**
   * Takes the pending releases of {@code entry} (word {@code onlyWord}, or every word if it is
   * negative), tells the DataNode in calls of at most the maximum batch ({@code onCaller}: on an
   * allocating caller's thread), then frees them. With {@code keepOne}, returns one of them
   * initialised for this caller (null if nothing was pending or the segment died meanwhile).
   */
  private Slot tellAndFree(PooledSegment entry, int onlyWord, boolean onCaller, boolean keepOne) {
    ReleaseBuffer buffer = ReleaseBuffer.acquire();
    try {
      int words = entry.wordCount();
      long[] taken = buffer.words(words);
      int n = 0;
      for (int w = 0; w < words; w++) {
        if ((onlyWord < 0 || w == onlyWord) && entry.hasPending(w)) {
          taken[w] = entry.takePending(w);
          n += Long.bitCount(taken[w]);
        }
      }
      if (n == 0) {
        return null;
      }
      inFlight.addAndGet(n);
      try {
        for (int w = 0; w < words; w++) {
          long bits = taken[w];
          while (bits != 0) {
            long bit = bits & -bits;
            bits ^= bit;
            buffer.ids.add(entry.segment.slot((w << 6) + Long.numberOfTrailingZeros(bit)).id());
            if (buffer.ids.size() == maxReleaseBatch) {
              tell(entry, buffer.view, onCaller);
              buffer.ids.clear();
            }
          }
        }
        tell(entry, buffer.view, onCaller);
        if (closed) {
          // Not told (no messages after close): these must reach nobody. Close kills the segment
          // and returns it once every bit is back.
          for (int w = 0; w < words; w++) {
            if (taken[w] != 0) {
              entry.addFree(w, taken[w]);
            }
          }
          return null;
        }
        Slot mine = null;
        for (int w = 0; w < words; w++) {
          long bits = taken[w];
          if (bits == 0) {
            continue;
          }
          if (keepOne && mine == null) {
            long bit = bits & -bits;
            bits ^= bit;
            mine = entry.initClaimed(w, bit); // null (bit freed) if the segment died
          }
          if (bits != 0) {
            distribute(entry, w, bits);
          }
        }
        return mine;
      } finally {
        inFlight.addAndGet(-n);
      }
    } finally {
      buffer.recycle();
    }
  }

  /**
   * One {@link SlotReleaser} call, unless the segment is dead or the pool closed (the DataNode
   * drops the slots with the segment then). A failure gives up the segment as stock does.
   */
  private void tell(PooledSegment entry, List<SlotId> slots, boolean onCaller) {
    if (slots.isEmpty() || entry.state() == PooledSegment.DEAD || closed) {
      return;
    }
    releaseBatches.incrementAndGet();
    if (onCaller) {
      callerReleaseBatches.incrementAndGet();
    }
    try {
      releaser.release(slots);
    } catch (IOException | RuntimeException | Error e) {
      // An Error too: rethrown, it would leave the taken slots neither free nor pending, and the
      // segment could never be returned. Whether the DataNode heard is unknown either way.
      releaseFailures.incrementAndGet();
      LOG.warn(
          "Releasing {} slots of segment {} of {} failed; giving up the segment as stock does",
          slots.size(),
          entry.segment.id(),
          name,
          e);
      boolean killed;
      structureLock.lock();
      try {
        killed = kill(entry);
      } finally {
        structureLock.unlock();
      }
      if (killed) {
        segmentsDisconnected.incrementAndGet();
        signalMaintenance();
        signalRefill();
      }
    }
  }

  /**
   * Frees {@code bits} of word {@code w}, which the DataNode no longer has registered (or which
   * belong to a dead segment): straight to waiting callers, oldest first, while the segment is
   * active; the rest into the free bitmap.
   */
  private void distribute(PooledSegment entry, int w, long bits) {
    while (bits != 0 && waiting.get() > 0 && entry.state() == PooledSegment.ACTIVE) {
      long bit = bits & -bits;
      bits ^= bit;
      Slot slot = entry.initClaimed(w, bit);
      if (slot == null) {
        break; // died: initClaimed freed the bit, the rest follows below
      }
      if (!handToWaiter(slot)) {
        slot.makeInvalid();
        bits |= bit;
        break;
      }
    }
    if (bits != 0) {
      entry.addFree(w, bits);
      lowerHint(entry);
    }
    // A caller may have queued after we looked: it saw no free slot, so it must see our count.
    if (waiting.get() > 0) {
      serveWaitersFromBitmap();
    }
  }

  /** Gives an initialised slot to the oldest waiter still waiting; false when there is none. */
  private boolean handToWaiter(Slot slot) {
    Waiter w;
    while ((w = waiterQueue.poll()) != null) {
      if (w.fill(slot)) {
        waiting.decrementAndGet();
        LockSupport.unpark(w.thread);
        return true;
      }
    }
    return false;
  }

  /**
   * Moves slots from the free bitmap to waiters, oldest first, while both exist. Stops at the first
   * counted waiter it cannot find (one that is just leaving or being served): a waiter re-checks on
   * its own at least every {@link #MAX_PARK_NANOS}.
   */
  private void serveWaitersFromBitmap() {
    while (waiting.get() > 0) {
      Slot slot = tryAllocate();
      if (slot == null) {
        return;
      }
      if (!handToWaiter(slot)) {
        putBack(slot);
        return;
      }
    }
  }

  /** A slot initialised for someone who no longer needs it: to the next waiter or the bitmap. */
  private void passOn(Slot slot) {
    if (!handToWaiter(slot)) {
      putBack(slot);
    }
  }

  private void putBack(Slot slot) {
    slot.makeInvalid();
    slot.segment().poolEntry.freeDirectly(slot.index());
  }

  // ------------------------------------------------------------------ background work

  /**
   * A free word ran dry (once per {@value #SLOTS_PER_CHECK} allocations): make sure the pool grows
   * if it runs low. See {@link #refillLevel}.
   */
  void onFreeWordExhausted() {
    checkWatermark();
  }

  private void checkWatermark() {
    if (needsSegment()) {
      signalRefill();
    }
  }

  void signalMaintenance() {
    if (!maintenanceWake.get() && maintenanceWake.compareAndSet(false, true)) {
      LockSupport.unpark(maintenanceThread);
    }
  }

  private void signalRefill() {
    if (!refillWake.get() && refillWake.compareAndSet(false, true)) {
      LockSupport.unpark(refillThread);
    }
  }

  /** A caller is about to park: grow by the segments the release backlog fills. */
  private void requestGrowth() {
    int backlog = pendingSlots() + Math.max(0, inFlight.get());
    if (backlog > 0) {
      lastBacklogWaitNanos = ticker.getAsLong();
    }
    int perSegment = slotsPerSegment;
    int want = Math.max(1, (backlog + perSegment - 1) / perSegment);
    int current;
    do {
      current = segmentsWanted.get();
    } while (current < want && !segmentsWanted.compareAndSet(current, want));
    signalRefill();
  }

  private void maintenanceLoop() {
    boolean lingered = false;
    while (!closed) {
      maintenanceWake.set(false);
      try {
        long parkNanos = maintainOnce();
        if (maintenanceFailures.inARow() > 0) {
          maintenanceFailures.succeeded(LOG, "Slot pool " + name + " maintenance");
        }
        if (closed || maintenanceWake.get() || parkNanos < 0) {
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
        maintenanceIdle = true;
        if (pendingSlots() == 0 && !maintenanceWake.get() && !closed) {
          LockSupport.park(this);
        }
        maintenanceIdle = false;
      } catch (RuntimeException | Error e) {
        maintenanceIdle = false;
        // Logged once per streak (then once a minute), not a stack trace every pass.
        long pause =
            maintenanceFailures.failed(
                LOG,
                "Slot pool " + name + " maintenance",
                e,
                ticker.getAsLong(),
                MAX_FAILURE_PAUSE_NANOS);
        LockSupport.parkNanos(this, pause);
      }
    }
  }

  /**
   * One maintenance pass. Returns how long to park: 0 = until signalled, negative = run again at
   * once, positive = at most that many nanoseconds (a release batch is maturing, or surplus is on
   * hold).
   */
  private long maintainOnce() {
    PooledSegment[] segments = live;
    long now = ticker.getAsLong();
    boolean urgent = waiting.get() > 0;
    long parkNanos = 0;
    boolean released = false;
    for (PooledSegment entry : segments) {
      int pending = entry.pendingCount();
      if (pending == 0) {
        entry.pendingSinceNanos = NOT_PENDING;
        continue;
      }
      if (entry.pendingSinceNanos == NOT_PENDING) {
        entry.pendingSinceNanos = now;
      }
      long age = now - entry.pendingSinceNanos;
      if (urgent
          || pending >= maxReleaseBatch
          || age >= releaseBatchDelayNanos
          || entry.state() == PooledSegment.DEAD) {
        releasePending(entry);
        entry.pendingSinceNanos = NOT_PENDING;
        released = true;
      } else {
        parkNanos = shorter(parkNanos, releaseBatchDelayNanos - age);
      }
    }
    parkNanos = shorter(parkNanos, retireSurplus(now));
    returnEmptySegments();
    checkWatermark();
    return released ? -1 : parkNanos;
  }

  private static long shorter(long parkNanos, long wait) {
    if (wait <= 0) {
      return parkNanos;
    }
    return parkNanos == 0 ? wait : Math.min(parkNanos, wait);
  }

  /**
   * Tells and frees every pending release of one segment, a word at a time, so that a descheduled
   * maintenance thread never holds more than one word of slots out of circulation.
   */
  private void releasePending(PooledSegment entry) {
    for (int w = 0; w < entry.wordCount(); w++) {
      if (entry.hasPending(w)) {
        tellAndFree(entry, w, false, false);
      }
    }
  }

  /**
   * Retires wholly free segments while free slots exceed the high watermark, unless a caller
   * recently waited on a release backlog; returns how long that hold still lasts (0 if none).
   */
  private long retireSurplus(long now) {
    long lastWait = lastBacklogWaitNanos;
    if (lastWait != NOT_PENDING && now - lastWait < SURPLUS_HOLD_NANOS) {
      return freeSlots() > highWatermark ? SURPLUS_HOLD_NANOS - (now - lastWait) : 0;
    }
    while (true) {
      PooledSegment[] segments = active;
      int free = freeSlots();
      if (free <= highWatermark) {
        return 0;
      }
      PooledSegment candidate = null;
      // Allocation packs low indexes, so the emptiest segments are at the end.
      for (int i = segments.length - 1; i >= 0; i--) {
        if (segments[i].isEmpty() && free - segments[i].slotCount >= refillLevel) {
          candidate = segments[i];
          break;
        }
      }
      if (candidate == null) {
        return 0;
      }
      structureLock.lock();
      try {
        if (candidate.transition(PooledSegment.ACTIVE, PooledSegment.RETIRED)) {
          active = without(active, candidate);
        }
      } finally {
        structureLock.unlock();
      }
    }
  }

  private void returnEmptySegments() {
    List<Segment> toReturn = null;
    structureLock.lock();
    try {
      for (PooledSegment entry : live) {
        int state = entry.state();
        if ((state == PooledSegment.RETIRED || state == PooledSegment.DEAD)
            && entry.isEmpty()
            && entry.transition(state, PooledSegment.RETURNED)) {
          live = without(live, entry);
          byId.remove(entry.segment.id());
          entry.segment.poolEntry = null;
          if (toReturn == null) {
            toReturn = new ArrayList<>();
          }
          toReturn.add(entry.segment);
        }
      }
    } finally {
      structureLock.unlock();
    }
    if (toReturn != null) {
      for (Segment segment : toReturn) {
        segmentsReturned.incrementAndGet();
        try {
          source.returnSegment(segment);
        } catch (RuntimeException e) {
          LOG.warn("Returning segment {} of {} failed", segment.id(), name, e);
        }
      }
    }
  }

  /**
   * Whether the refill thread should fetch: callers waited on a backlog the pool is too small for,
   * or free, pending and in-flight slots together are below the low watermark.
   */
  private boolean needsSegment() {
    if (closed || live.length >= maxSegments) {
      return false;
    }
    if (segmentsWanted.get() > 0) {
      if (waiting.get() > 0 || freeSlots() < refillLevel) {
        return true;
      }
      segmentsWanted.set(0); // the waiters were served otherwise
    }
    return !atLeastAvailable(refillLevel);
  }

  /** Free + pending + in-flight ≥ n; scans from the emptiest segments and stops early. */
  private boolean atLeastAvailable(int n) {
    int sum = Math.max(0, inFlight.get());
    if (sum >= n) {
      return true;
    }
    PooledSegment[] segments = live;
    for (int i = segments.length - 1; i >= 0; i--) {
      PooledSegment entry = segments[i];
      if (entry.state() == PooledSegment.ACTIVE) {
        sum += entry.freeCount() + entry.pendingCount();
        if (sum >= n) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The refill thread. A failure outside a fetch (an {@code Error} in bookkeeping, or thrown by
   * {@link SegmentSource#returnSegment}) is logged once (rate-limited) and the loop goes on: a dead
   * refill thread would leave the pool unable to grow, silently.
   */
  private void refillLoop() {
    while (!closed) {
      try {
        refillUntilClosed();
      } catch (RuntimeException | Error e) {
        endFetch();
        long pause =
            refillFailures.failed(
                LOG,
                "Slot pool " + name + " refill thread",
                e,
                ticker.getAsLong(),
                MAX_FAILURE_PAUSE_NANOS);
        LockSupport.parkNanos(this, pause);
      }
    }
  }

  private void refillUntilClosed() {
    int failuresInARow = 0;
    long backoff = initialBackoffNanos;
    long nextFetchAt = ticker.getAsLong();
    while (!closed) {
      refillWake.set(false);
      if (!needsSegment()) {
        if (!refillWake.get() && !closed) {
          LockSupport.park(this);
        }
        continue;
      }
      long now = ticker.getAsLong();
      if (now - nextFetchAt < 0) {
        LockSupport.parkNanos(this, nextFetchAt - now);
        continue;
      }
      Segment segment;
      startFetch();
      try {
        segment = source.fetch();
      } catch (IOException | RuntimeException | Error e) {
        // An Error (OutOfMemoryError, LinkageError from the native stack) is a failed fetch too:
        // the refill thread must outlive it, or the pool silently never grows again.
        endFetch();
        segmentFetchFailures.incrementAndGet();
        lastFetchFailure = e;
        nextFetchAt = ticker.getAsLong() + backoff;
        // The first failure of a streak is a warning with its cause; the retries of the same
        // streak (every few seconds while, say, the DataNode refuses shared memory) are debug.
        if (e instanceof Error) {
          // Never silent, never a flood: first in full, then once a minute.
          refillFailures.failed(
              LOG, "Fetching a shared-memory segment for " + name, e, ticker.getAsLong(), 0);
          failuresInARow++;
        } else if (failuresInARow++ == 0) {
          LOG.warn(
              "Fetching a shared-memory segment for {} failed; retrying in {} ms (later failures"
                  + " in a row are logged at DEBUG)",
              name,
              TimeUnit.NANOSECONDS.toMillis(backoff),
              e);
        } else if (LOG.isDebugEnabled()) {
          LOG.debug(
              "Fetching a shared-memory segment for {} failed again ({} in a row); retrying in {}"
                  + " ms: {}",
              name,
              failuresInARow,
              TimeUnit.NANOSECONDS.toMillis(backoff),
              e.toString());
        }
        backoff = Math.min(maxBackoffNanos, backoff * 2);
        continue;
      }
      if (segment == null || segment.isClosed()) {
        endFetch();
        segmentFetchFailures.incrementAndGet();
        lastFetchFailure = new IOException("segment source returned " + segment);
        nextFetchAt = ticker.getAsLong() + backoff;
        continue;
      }
      if (failuresInARow > 0) {
        LOG.info(
            "Fetching shared-memory segments for {} works again after {} failures",
            name,
            failuresInARow);
        failuresInARow = 0;
      }
      segmentFetches.incrementAndGet();
      int wanted;
      do {
        wanted = segmentsWanted.get();
      } while (wanted > 0 && !segmentsWanted.compareAndSet(wanted, wanted - 1));
      if (adopt(segment, backoff == initialBackoffNanos) == Adoption.DISCONNECTED) {
        // The peer dropped it at once: back off as after a failure, so a DataNode that keeps
        // doing so is neither hammered nor floods the log (only a streak's first is at INFO).
        nextFetchAt = ticker.getAsLong() + backoff;
        backoff = Math.min(maxBackoffNanos, backoff * 2);
      } else {
        backoff = initialBackoffNanos;
      }
      if (refillFailures.inARow() > 0) {
        refillFailures.succeeded(LOG, "Fetching shared-memory segments for " + name);
      }
    }
  }

  private void startFetch() {
    structureLock.lock();
    try {
      fetching = true;
    } finally {
      structureLock.unlock();
    }
  }

  private void endFetch() {
    structureLock.lock();
    try {
      fetching = false;
      disconnectedWhileFetching.clear();
    } finally {
      structureLock.unlock();
    }
  }

  /** What {@link #adopt} did with a fetched segment. */
  enum Adoption {
    /** In the pool, allocatable. */
    ADOPTED,
    /** Disconnected while it was being fetched: handed back, counted as disconnected. */
    DISCONNECTED,
    /** The pool is closed, or the source handed it out twice: handed back. */
    REFUSED
  }

  /**
   * Puts a fetched segment into allocation; hands it straight back if the pool closed or the
   * segment was reported disconnected while it was being fetched. Ends the fetch in flight.
   */
  Adoption adopt(Segment segment, boolean logAtInfo) {
    PooledSegment entry = new PooledSegment(this, segment);
    Adoption result = Adoption.REFUSED;
    structureLock.lock();
    try {
      boolean diedInFlight = disconnectedWhileFetching.contains(segment.id());
      fetching = false;
      disconnectedWhileFetching.clear();
      if (diedInFlight && !closed) {
        result = Adoption.DISCONNECTED;
      } else if (!closed && segment.poolEntry == null && !byId.containsKey(segment.id())) {
        segment.poolEntry = entry;
        byId.put(segment.id(), entry);
        live = with(live, entry);
        active = with(active, entry);
        result = Adoption.ADOPTED;
      }
    } finally {
      structureLock.unlock();
    }
    if (result != Adoption.ADOPTED) {
      if (result == Adoption.DISCONNECTED) {
        segmentsDisconnected.incrementAndGet();
        String message =
            "Segment {} of {} disconnected before the pool adopted it; handing it back and"
                + " fetching another";
        if (logAtInfo) {
          LOG.info(message, segment.id(), name);
        } else {
          LOG.debug(message, segment.id(), name);
        }
      } else if (!closed) {
        LOG.warn("Source of {} returned segment {} twice; handing it back", name, segment.id());
      }
      segmentsReturned.incrementAndGet();
      source.returnSegment(segment);
      return result;
    }
    slotsPerSegment = Math.max(1, segment.slotCount());
    serveWaitersFromBitmap();
    return result;
  }

  // ------------------------------------------------------------------ gauges and stats

  private int freeSlots() {
    int n = 0;
    for (PooledSegment entry : active) {
      n += entry.freeCount();
    }
    return n;
  }

  private int pendingSlots() {
    int n = 0;
    for (PooledSegment entry : live) {
      n += entry.pendingCount();
    }
    return n;
  }

  /** A snapshot of the counters and gauges; cheap enough for a metrics poll, not for a read. */
  public SlotPoolStats stats() {
    PooledSegment[] segments = live;
    int notFreeNorPending = 0;
    int pending = 0;
    for (PooledSegment entry : segments) {
      notFreeNorPending += entry.notFreeNorPendingCount();
      pending += entry.pendingCount();
    }
    int told = Math.max(0, inFlight.get());
    long allocs = allocations.sum();
    Histogram waits = waitNanos.copy();
    waits.recordValueWithCount(0, Math.max(0, allocs - waits.getTotalCount()));
    long[] percentiles = {
      waits.getValueAtPercentile(50),
      waits.getValueAtPercentile(99),
      waits.getValueAtPercentile(99.9),
      waits.getMaxValue()
    };
    return new SlotPoolStats(
        name,
        new int[] {
          Math.max(0, notFreeNorPending - told), freeSlots(), pending + told, segments.length
        },
        new long[] {
          allocs,
          releases.sum(),
          allocationsThatWaited.get(),
          allocationTimeouts.get(),
          segmentFetches.get(),
          segmentFetchFailures.get(),
          segmentsReturned.get(),
          segmentsDisconnected.get(),
          releaseBatches.get(),
          releaseFailures.get(),
          callerReleaseBatches.get()
        },
        percentiles);
  }

  // ------------------------------------------------------------------ close

  /**
   * Stops the background threads, invalidates every slot, and returns every segment to the source:
   * the empty ones now, the others when their last holder releases. Idempotent. Waiting allocators
   * get {@link SlotPoolClosedException}.
   */
  @Override
  public void close() {
    structureLock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
    } finally {
      structureLock.unlock();
    }
    LockSupport.unpark(maintenanceThread);
    refillThread.interrupt();
    joinQuietly(maintenanceThread);
    joinQuietly(refillThread);
    for (Waiter w : waiterQueue) {
      LockSupport.unpark(w.thread);
    }
    structureLock.lock();
    try {
      for (PooledSegment entry : live) {
        kill(entry);
      }
      active = NO_SEGMENTS;
    } finally {
      structureLock.unlock();
    }
    processAfterClose();
  }

  private void joinQuietly(Thread thread) {
    if (thread == Thread.currentThread()) {
      return;
    }
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
      if (thread.isAlive()) {
        LOG.warn("{} did not stop within 10 s (a segment fetch is stuck?)", thread.getName());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** After close: frees pending bits locally and returns what is empty, on the calling thread. */
  private void processAfterClose() {
    for (PooledSegment entry : live) {
      if (entry.pendingCount() > 0) {
        releasePending(entry);
      }
    }
    returnEmptySegments();
  }

  // ------------------------------------------------------------------ helpers

  private static PooledSegment[] with(PooledSegment[] array, PooledSegment entry) {
    PooledSegment[] copy = Arrays.copyOf(array, array.length + 1);
    copy[array.length] = entry;
    return copy;
  }

  private static PooledSegment[] without(PooledSegment[] array, PooledSegment entry) {
    for (int i = 0; i < array.length; i++) {
      if (array[i] == entry) {
        PooledSegment[] copy = new PooledSegment[array.length - 1];
        System.arraycopy(array, 0, copy, 0, i);
        System.arraycopy(array, i + 1, copy, i, array.length - i - 1);
        return copy;
      }
    }
    return array;
  }

  @Override
  public String toString() {
    return "SlotPool{" + name + (closed ? ", closed}" : "}");
  }

  /**
   * A caller queued for a slot. WAITING → FILLED (a freeing thread stored {@code slot} first, so
   * the waiter sees it after reading the state) or WAITING → CANCELLED (the waiter left).
   */
  private static final class Waiter {
    private static final int WAITING = 0;
    private static final int FILLED = 1;
    private static final int CANCELLED = 2;
    private static final VarHandle STATE;

    static {
      try {
        STATE = MethodHandles.lookup().findVarHandle(Waiter.class, "state", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    final Thread thread;
    private volatile int state;

    /** Written by the filling thread before its CAS; read by the waiter after seeing FILLED. */
    Slot slot;

    Waiter(Thread thread) {
      this.thread = thread;
    }

    boolean fill(Slot s) {
      slot = s;
      return STATE.compareAndSet(this, WAITING, FILLED);
    }

    boolean cancel() {
      return STATE.compareAndSet(this, WAITING, CANCELLED);
    }

    boolean isFilled() {
      return state == FILLED;
    }

    boolean isWaiting() {
      return state == WAITING;
    }
  }

  /**
   * The list handed to the {@link SlotReleaser}: reused per thread so that telling a release
   * allocates nothing. Valid only during the releaser call (documented on {@link SlotReleaser}).
   */
  private static final class ReleaseBuffer {
    private static final ThreadLocal<ReleaseBuffer> PER_THREAD = new ThreadLocal<>();

    final ArrayList<SlotId> ids;
    final List<SlotId> view;
    private long[] words = new long[2];
    private boolean inUse;

    private ReleaseBuffer() {
      ids = new ArrayList<>(64);
      view = Collections.unmodifiableList(ids);
    }

    /** This thread's buffer, or a fresh one if it is in use (a releaser that re-entered). */
    static ReleaseBuffer acquire() {
      ReleaseBuffer b = PER_THREAD.get();
      if (b == null) {
        b = new ReleaseBuffer();
        PER_THREAD.set(b);
      } else if (b.inUse) {
        b = new ReleaseBuffer();
      }
      b.inUse = true;
      return b;
    }

    /** A zeroed scratch array of at least {@code n} words. */
    long[] words(int n) {
      if (words.length < n) {
        words = new long[n];
      }
      return words;
    }

    void recycle() {
      ids.clear();
      Arrays.fill(words, 0L);
      inUse = false;
    }
  }

  /** Configuration for a {@link SlotPool}; defaults in docs/shm.md. Not thread-safe. */
  public static final class Builder {
    private final String name;
    private final SegmentSource source;
    private final SlotReleaser releaser;
    private int lowWatermark = 64;
    private int highWatermark = -1;
    private int maxSegments = 256;
    private Duration maxAllocationWait = Duration.ofMillis(50);
    private Duration releaseBatchDelay = Duration.ofMillis(2);
    private int maxReleaseBatch = 128;
    private Duration initialFetchBackoff = Duration.ofMillis(100);
    private Duration maxFetchBackoff = Duration.ofSeconds(10);
    private LongSupplier ticker = System::nanoTime;
    private ThreadFactory threadFactory =
        r -> {
          Thread t = new Thread(r);
          t.setDaemon(true);
          return t;
        };

    private Builder(String name, SegmentSource source, SlotReleaser releaser) {
      if (name == null || source == null || releaser == null) {
        throw new NullPointerException("name, source and releaser are required");
      }
      this.name = name;
      this.source = source;
      this.releaser = releaser;
    }

    /**
     * Free slots the pool keeps ready (counting releases in flight). The level is checked once per
     * 64 allocations, so the refill thread fetches a segment when fewer than this plus 64 are left
     * and the watermark holds between checks. Default 64 (half a stock segment); 0 fetches only
     * when a caller finds the pool empty.
     */
    public Builder lowWatermark(int slots) {
      this.lowWatermark = requireNonNegative(slots, "lowWatermark");
      return this;
    }

    /**
     * Above this many free slots, wholly free segments are returned (never below the low
     * watermark). Default: low watermark + 256.
     */
    public Builder highWatermark(int slots) {
      this.highWatermark = requireNonNegative(slots, "highWatermark");
      return this;
    }

    /** Most segments the pool holds at once. Default 256 (32768 stock slots). */
    public Builder maxSegments(int segments) {
      if (segments < 1) {
        throw new IllegalArgumentException("maxSegments must be at least 1");
      }
      this.maxSegments = segments;
      return this;
    }

    /**
     * Longest an allocation queues when no slot is free and no release is pending (a caller that
     * tells pending releases itself is bounded by the releaser's own I/O timeouts instead). Default
     * 50 ms; zero never queues.
     */
    public Builder maxAllocationWait(Duration wait) {
      this.maxAllocationWait = requireNonNegative(wait, "maxAllocationWait");
      return this;
    }

    /**
     * How long released slots may wait for the maintenance thread to send them together (it sends
     * at once while callers wait, and a caller that finds no free slot tells pending releases
     * itself). Default 2 ms.
     */
    public Builder releaseBatchDelay(Duration delay) {
      this.releaseBatchDelay = requireNonNegative(delay, "releaseBatchDelay");
      return this;
    }

    /** Most slots per {@link SlotReleaser} call, whichever thread makes it. Default 128. */
    public Builder maxReleaseBatch(int slots) {
      if (slots < 1) {
        throw new IllegalArgumentException("maxReleaseBatch must be at least 1");
      }
      this.maxReleaseBatch = slots;
      return this;
    }

    /** Backoff after a failed fetch, doubling per failure up to the maximum. Default 100 ms. */
    public Builder initialFetchBackoff(Duration backoff) {
      this.initialFetchBackoff = requireNonNegative(backoff, "initialFetchBackoff");
      return this;
    }

    /** Cap of the fetch backoff. Default 10 s. */
    public Builder maxFetchBackoff(Duration backoff) {
      this.maxFetchBackoff = requireNonNegative(backoff, "maxFetchBackoff");
      return this;
    }

    /** Monotonic nanosecond time source for waits and ages. Default {@code System::nanoTime}. */
    public Builder ticker(LongSupplier ticker) {
      if (ticker == null) {
        throw new NullPointerException("ticker");
      }
      this.ticker = ticker;
      return this;
    }

    /** Makes the maintenance and refill threads (the pool names them). Default: daemon threads. */
    public Builder threadFactory(ThreadFactory threadFactory) {
      if (threadFactory == null) {
        throw new NullPointerException("threadFactory");
      }
      this.threadFactory = threadFactory;
      return this;
    }

    /** Builds the pool and starts its threads, which fetch up to the low watermark at once. */
    public SlotPool build() {
      if (highWatermark < 0) {
        highWatermark = lowWatermark + 256;
      }
      if (highWatermark < lowWatermark) {
        throw new IllegalArgumentException(
            "highWatermark " + highWatermark + " is below lowWatermark " + lowWatermark);
      }
      if (maxFetchBackoff.compareTo(initialFetchBackoff) < 0) {
        throw new IllegalArgumentException("maxFetchBackoff is below initialFetchBackoff");
      }
      SlotPool pool = new SlotPool(this);
      pool.start();
      return pool;
    }

    private static int requireNonNegative(int value, String what) {
      if (value < 0) {
        throw new IllegalArgumentException(what + " must not be negative: " + value);
      }
      return value;
    }

    private static Duration requireNonNegative(Duration value, String what) {
      if (value == null || value.isNegative()) {
        throw new IllegalArgumentException(what + " must be a non-negative duration: " + value);
      }
      return value;
    }
  }
}
