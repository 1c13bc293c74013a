package io.scr.shm;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
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
 * and initialises the slot the stock way (store 0, set VALID); it takes no lock and does no I/O.
 * {@link #release(Slot)} sets a bit in the segment's pending bitmap with one atomic OR. The pool's
 * <em>maintenance</em> thread collects pending bits, tells the DataNode through the {@link
 * SlotReleaser} (one call per segment per batch), and only then frees the bits, because the
 * DataNode rejects a slot it still has registered. A separate <em>refill</em> thread calls {@link
 * SegmentSource#fetch()} whenever free plus pending slots fall below the low watermark, or a caller
 * waits on an empty pool, so readers never wait for a segment to load while slots are free.
 *
 * <p><b>Concurrency contract.</b> Allocation and release are lock-free. {@code structureLock}
 * guards segment membership and state transitions (adopting, retiring, killing, returning); only
 * the background threads, {@link #segmentDisconnected} and {@link #close()} take it, never the
 * allocation or release fast path. Allocators read the allocation array without a lock and may see
 * a stale one; {@link PooledSegment#tryClaim} handles that race. {@code waitLock} is taken only by
 * callers that found the pool empty and by threads that free slots while someone waits. No lock is
 * held while calling the source or the releaser.
 *
 * <p><b>Empty pool.</b> A caller that finds no free slot wakes both background threads, yields a
 * few times, then waits on a condition for at most {@link Builder#maxAllocationWait}, and then gets
 * {@link SlotPoolExhaustedException}. Waits are measured with the injected ticker.
 *
 * <p><b>Shrinking and failure.</b> A wholly free segment is retired and returned to the source
 * while the pool holds more than {@link Builder#highWatermark} free slots (and keeps at least the
 * low watermark). {@link #segmentDisconnected} (the DataNode closed the segment's socket) or a
 * failed release invalidates every slot of the segment at once; holders see VALID clear, and the
 * segment is returned once they have all released. Fetch failures back off exponentially.
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
  private static final int SPIN_YIELDS = 32;
  static final long NOT_PENDING = Long.MIN_VALUE;

  private final String name;
  private final SegmentSource source;
  private final SlotReleaser releaser;
  private final LongSupplier ticker;
  private final int lowWatermark;
  private final int highWatermark;
  private final int maxSegments;
  private final long maxAllocationWaitNanos;
  private final long releaseBatchDelayNanos;
  private final int maxReleaseBatch;
  private final long initialBackoffNanos;
  private final long maxBackoffNanos;

  /** Segments allocation scans, lowest index first; copy-on-write under structureLock. */
  private volatile PooledSegment[] active = NO_SEGMENTS;

  /** Every segment not yet returned; copy-on-write under structureLock, for lock-free scans. */
  private volatile PooledSegment[] live = NO_SEGMENTS;

  private final ReentrantLock structureLock = new ReentrantLock();

  @GuardedBy("structureLock")
  private final Map<ShmId, PooledSegment> byId = new HashMap<>();

  private final ReentrantLock waitLock = new ReentrantLock();
  private final Condition slotsAvailable = waitLock.newCondition();
  private final AtomicInteger waiters = new AtomicInteger();

  private final Thread maintenanceThread;
  private final Thread refillThread;
  private final AtomicBoolean maintenanceWake = new AtomicBoolean();
  private final AtomicBoolean refillWake = new AtomicBoolean();
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
  private final AtomicLong releaseFailures = new AtomicLong();
  private final Histogram waitNanos = new ConcurrentHistogram(3);
  private volatile Throwable lastFetchFailure;

  private SlotPool(Builder b) {
    this.name = b.name;
    this.source = b.source;
    this.releaser = b.releaser;
    this.ticker = b.ticker;
    this.lowWatermark = b.lowWatermark;
    this.highWatermark = b.highWatermark;
    this.maxSegments = b.maxSegments;
    this.maxAllocationWaitNanos = b.maxAllocationWait.toNanos();
    this.releaseBatchDelayNanos = b.releaseBatchDelay.toNanos();
    this.maxReleaseBatch = b.maxReleaseBatch;
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
   * free slots; otherwise waits at most the configured maximum allocation wait.
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

  private Slot tryAllocate() {
    PooledSegment[] segments = active;
    for (PooledSegment segment : segments) {
      Slot slot = segment.tryClaim();
      if (slot != null) {
        return slot;
      }
    }
    return null;
  }

  // Thread.yield is deliberate: with more busy threads than cores (the 8-threads-on-2-cores case),
  // it hands the CPU to the maintenance thread that is about to free slots, before we block.
  @SuppressWarnings("ThreadPriorityCheck")
  private Slot allocateSlow() throws IOException {
    if (closed) {
      throw closedException();
    }
    long start = ticker.getAsLong();
    signalMaintenance();
    signalRefill();
    if (maxAllocationWaitNanos > 0) {
      for (int i = 0; i < SPIN_YIELDS; i++) {
        Thread.yield();
        Slot slot = tryAllocate();
        if (slot != null) {
          return waited(start, slot);
        }
      }
    }
    long deadline = start + maxAllocationWaitNanos;
    waiters.incrementAndGet();
    try {
      while (true) {
        Slot slot = tryAllocate();
        if (slot != null) {
          return waited(start, slot);
        }
        if (closed) {
          throw closedException();
        }
        long remaining = deadline - ticker.getAsLong();
        if (remaining <= 0) {
          allocationTimeouts.incrementAndGet();
          throw exhausted(ticker.getAsLong() - start);
        }
        waitLock.lock();
        try {
          // Freeing threads add bits, then signal under waitLock if waiters > 0: no lost wakeup.
          slot = tryAllocate();
          if (slot != null) {
            return waited(start, slot);
          }
          slotsAvailable.awaitNanos(remaining);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException(
              "interrupted while waiting for a shared-memory slot of " + name);
        } finally {
          waitLock.unlock();
        }
      }
    } finally {
      waiters.decrementAndGet();
    }
  }

  private Slot waited(long start, Slot slot) {
    allocations.increment();
    allocationsThatWaited.incrementAndGet();
    waitNanos.recordValue(Math.max(0, ticker.getAsLong() - start));
    return slot;
  }

  private SlotPoolExhaustedException exhausted(long waited) {
    SlotPoolStats s = stats();
    return new SlotPoolExhaustedException(
        String.format(
            "No free shared-memory slot for %s after waiting %.1f ms (%d free, %d in use, %d"
                + " awaiting release by the DataNode, %d segments, %d segment fetch failures)."
                + " The read proceeds without a slot. If this recurs under normal load, raise %s"
                + " (now %d ms) or %s (now %d slots), or check the DataNode's segment limit.",
            name,
            waited / 1e6,
            s.slotsFree(),
            s.slotsInUse(),
            s.slotsPendingRelease(),
            s.segments(),
            s.segmentFetchFailures(),
            MAX_ALLOCATION_WAIT_KEY,
            TimeUnit.NANOSECONDS.toMillis(maxAllocationWaitNanos),
            LOW_WATERMARK_KEY,
            lowWatermark),
        waited,
        lastFetchFailure);
  }

  private SlotPoolClosedException closedException() {
    return new SlotPoolClosedException("slot pool " + name + " is closed");
  }

  /**
   * Releases a slot the DataNode registered (it was sent with a REQUEST_SHORT_CIRCUIT_FDS that
   * succeeded). O(1) on the caller's thread: one atomic OR; the DataNode is told in the background
   * and the slot is reusable after that. The caller must not touch the slot afterwards.
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
      signalMaintenance();
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
    signalWaiters();
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
   * @return false when the pool does not hold that segment (already returned, or never fetched)
   */
  public boolean segmentDisconnected(ShmId id) {
    structureLock.lock();
    try {
      PooledSegment entry = byId.get(id);
      if (entry == null || !kill(entry)) {
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

  // ------------------------------------------------------------------ background work

  void onFreeWordExhausted() {
    signalMaintenance();
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

  private void signalWaiters() {
    if (waiters.get() > 0) {
      waitLock.lock();
      try {
        slotsAvailable.signalAll();
      } finally {
        waitLock.unlock();
      }
    }
  }

  private void maintenanceLoop() {
    List<SlotId> batch = new ArrayList<>(maxReleaseBatch);
    while (!closed) {
      maintenanceWake.set(false);
      try {
        long parkNanos = maintainOnce(batch);
        if (closed || maintenanceWake.get()) {
          continue;
        }
        if (parkNanos == 0) {
          LockSupport.park(this);
        } else if (parkNanos > 0) {
          LockSupport.parkNanos(this, parkNanos);
        }
      } catch (RuntimeException | Error e) {
        LOG.error("Slot pool {} maintenance failed; retrying", name, e);
        LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(10));
      }
    }
  }

  /**
   * One maintenance pass. Returns how long to park: 0 = until signalled, negative = run again at
   * once, positive = at most that many nanoseconds (a release batch is maturing).
   */
  private long maintainOnce(List<SlotId> batch) {
    PooledSegment[] segments = live;
    long now = ticker.getAsLong();
    int free = freeSlots();
    boolean urgent = free < lowWatermark || waiters.get() > 0;
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
        releasePending(entry, batch);
        entry.pendingSinceNanos = NOT_PENDING;
        released = true;
      } else {
        long wait = releaseBatchDelayNanos - age;
        parkNanos = parkNanos == 0 ? wait : Math.min(parkNanos, wait);
      }
    }
    if (released) {
      signalWaiters();
    }
    retireSurplus();
    returnEmptySegments();
    if (needsSegment()) {
      signalRefill();
    }
    return released ? -1 : parkNanos;
  }

  /** Sends and frees the pending releases of one segment. Maintenance thread (or after close). */
  private void releasePending(PooledSegment entry, List<SlotId> batch) {
    int words = entry.wordCount();
    long[] taken = new long[words];
    for (int w = 0; w < words; w++) {
      taken[w] = entry.takePending(w);
    }
    if (entry.state() != PooledSegment.DEAD && !closed) {
      batch.clear();
      for (int w = 0; w < words; w++) {
        long bits = taken[w];
        while (bits != 0) {
          int index = (w << 6) + Long.numberOfTrailingZeros(bits);
          bits &= bits - 1;
          batch.add(entry.segment.slot(index).id());
          if (batch.size() == maxReleaseBatch) {
            sendReleases(entry, batch);
          }
        }
      }
      if (!batch.isEmpty()) {
        sendReleases(entry, batch);
      }
    }
    // Even a failed release frees the bits: the segment is DEAD then and returned once empty.
    for (int w = 0; w < words; w++) {
      if (taken[w] != 0) {
        entry.addFree(w, taken[w]);
      }
    }
  }

  private void sendReleases(PooledSegment entry, List<SlotId> batch) {
    if (entry.state() == PooledSegment.DEAD) {
      batch.clear();
      return;
    }
    releaseBatches.incrementAndGet();
    try {
      releaser.release(Collections.unmodifiableList(batch));
    } catch (IOException | RuntimeException e) {
      releaseFailures.incrementAndGet();
      LOG.warn(
          "Releasing {} slots of segment {} of {} failed; giving up the segment as stock does",
          batch.size(),
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
        signalRefill();
      }
    }
    batch.clear();
  }

  private void retireSurplus() {
    while (true) {
      PooledSegment[] segments = active;
      int free = freeSlots();
      if (free <= highWatermark) {
        return;
      }
      PooledSegment candidate = null;
      // Allocation packs low indexes, so the emptiest segments are at the end.
      for (int i = segments.length - 1; i >= 0; i--) {
        if (segments[i].isEmpty() && free - segments[i].slotCount >= lowWatermark) {
          candidate = segments[i];
          break;
        }
      }
      if (candidate == null) {
        return;
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

  private boolean needsSegment() {
    if (closed || live.length >= maxSegments) {
      return false;
    }
    int free = freeSlots();
    int pending = pendingSlots();
    // A caller waiting on an empty pool while releases are still in flight means the pool is too
    // small for the release round trip (or the maintenance thread is starved of CPU): grow it.
    return free + pending < lowWatermark || (waiters.get() > 0 && free == 0);
  }

  private void refillLoop() {
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
      try {
        segment = source.fetch();
      } catch (IOException | RuntimeException e) {
        segmentFetchFailures.incrementAndGet();
        lastFetchFailure = e;
        nextFetchAt = ticker.getAsLong() + backoff;
        LOG.warn(
            "Fetching a shared-memory segment for {} failed; retrying in {} ms",
            name,
            TimeUnit.NANOSECONDS.toMillis(backoff),
            e);
        backoff = Math.min(maxBackoffNanos, backoff * 2);
        continue;
      }
      if (segment == null || segment.isClosed()) {
        segmentFetchFailures.incrementAndGet();
        lastFetchFailure = new IOException("segment source returned " + segment);
        nextFetchAt = ticker.getAsLong() + backoff;
        continue;
      }
      backoff = initialBackoffNanos;
      segmentFetches.incrementAndGet();
      adopt(segment);
    }
  }

  /** Puts a fetched segment into allocation; hands it straight back if the pool closed. */
  void adopt(Segment segment) {
    PooledSegment entry = new PooledSegment(this, segment);
    boolean adopted = false;
    structureLock.lock();
    try {
      if (!closed && segment.poolEntry == null && !byId.containsKey(segment.id())) {
        segment.poolEntry = entry;
        byId.put(segment.id(), entry);
        live = with(live, entry);
        active = with(active, entry);
        adopted = true;
      }
    } finally {
      structureLock.unlock();
    }
    if (!adopted) {
      if (!closed) {
        LOG.warn("Source of {} returned segment {} twice; handing it back", name, segment.id());
      }
      segmentsReturned.incrementAndGet();
      source.returnSegment(segment);
      return;
    }
    signalWaiters();
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
    int inUse = 0;
    int pending = 0;
    for (PooledSegment entry : segments) {
      inUse += entry.inUseCount();
      pending += entry.pendingCount();
    }
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
        new int[] {inUse, freeSlots(), pending, segments.length},
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
          releaseFailures.get()
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
    waitLock.lock();
    try {
      slotsAvailable.signalAll();
    } finally {
      waitLock.unlock();
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
        releasePending(entry, new ArrayList<>(0));
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
     * Free slots the pool keeps ready (counting releases in flight): below this the refill thread
     * fetches a segment. Default 64 (half a stock segment).
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

    /** Longest an allocation waits when the pool is empty. Default 50 ms; zero fails at once. */
    public Builder maxAllocationWait(Duration wait) {
      this.maxAllocationWait = requireNonNegative(wait, "maxAllocationWait");
      return this;
    }

    /**
     * How long released slots may wait to be sent together (unless the pool runs low, which sends
     * at once). Default 2 ms.
     */
    public Builder releaseBatchDelay(Duration delay) {
      this.releaseBatchDelay = requireNonNegative(delay, "releaseBatchDelay");
      return this;
    }

    /** Most slots per {@link SlotReleaser} call. Default 128. */
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
