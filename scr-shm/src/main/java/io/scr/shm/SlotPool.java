package io.scr.shm;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
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
 * <p><b>Empty pool: nobody waits for a thread that has no CPU.</b> A caller that finds no free slot
 * while releases are pending tells them itself and keeps one; only when nothing is pending does it
 * queue, helping the other waiters while it waits, for at most {@link Builder#maxAllocationWait}
 * plus the one release round trip it may have started before that ran out ({@link
 * SlotPoolExhaustedException} after that). Waiters are served in arrival order among themselves,
 * but a caller that never queued can still take a slot first; the exact promise is on {@link
 * AllocationWait}. A caller that has to park asks the refill thread to grow the pool by as many
 * segments as the release backlog fills, up to {@link Builder#maxSegments}.
 *
 * <p><b>Concurrency contract.</b> Allocation and release are lock-free; neither touches a lock on
 * the fast path. The pool is a facade over parts with one job each (docs/shm.md draws who calls
 * whom): {@link SegmentTable} (membership and segment states under the segment lock, copy-on-write
 * arrays for lock-free scans), {@link SlotAllocator} (the CAS claim, and freed slots to waiters
 * first), {@link HandOffQueue} (the waiter queue: each waiter is filled or cancelled exactly once,
 * by CAS), {@link ReleaseBatcher} (pending → told → free), {@link Refiller} (the refill thread and
 * the watermarks), {@link Maintenance} (the maintenance thread) and {@link AllocationWait} (a
 * caller's path when nothing is free). The segment lock is taken by the refill thread (fetch
 * bookkeeping, adopting), the maintenance thread (retiring, returning), {@link
 * #segmentDisconnected} (any thread), a thread whose releaser call failed, {@link #close()}, and,
 * after close, every {@link #release}/{@link #releaseUnregistered} (it returns what became empty).
 * No lock is held while calling the source or the releaser; the releaser may be called by several
 * threads at once, each with different slots.
 *
 * <p><b>Shrinking and failure.</b> A wholly free segment is returned to the source while the pool
 * holds more than {@link Builder#highWatermark} free slots, except within {@value
 * #SURPLUS_HOLD_MILLIS} ms of a caller waiting on a release backlog. {@link #segmentDisconnected}
 * or a failed release invalidates every slot of the segment at once; holders see VALID clear, and
 * the segment is returned once they have all released. Fetch failures back off exponentially. An
 * {@code Error} in a background thread (from the source, the releaser or the pool's own
 * bookkeeping) is logged once per streak and the thread keeps running; an {@code Error} from the
 * releaser gives up the segment like any failed release.
 *
 * <p><b>Lifecycle.</b> {@link Builder#build()} starts both threads, which immediately fetch up to
 * the low watermark (after a first fetch on the building thread, with {@link
 * Builder#firstFetchOnBuild}). {@link #close()} stops them, invalidates every slot, returns every
 * empty segment at once and every other segment when its last slot is released (on the releasing
 * thread). No remote releases are sent after close: returning a segment makes the DataNode drop all
 * its slots.
 */
public final class SlotPool extends ActiveSegments implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);
  static final long NOT_PENDING = Long.MIN_VALUE;

  /** A background thread that keeps failing waits at most this long before it tries again. */
  static final long MAX_FAILURE_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** No surplus is returned within this long of a caller waiting on a release backlog. */
  static final long SURPLUS_HOLD_MILLIS = 1000;

  private final String name;
  private final PoolCounters counters = new PoolCounters();
  private final SegmentTable table;
  private final HandOffQueue<Slot> waiters = new HandOffQueue<>();
  private final SlotAllocator allocator;
  private final ReleaseBatcher batcher;
  private final Refiller refiller;
  private final Maintenance maintenance;
  private final AllocationWait slowPath;

  // The two counters the fast paths bump, held here: one dereference fewer per call than through
  // PoolCounters.
  private final LongAdder allocations = counters.allocations;
  private final LongAdder releases = counters.releases;

  private SlotPool(Builder b) {
    this.name = b.name;
    this.table = new SegmentTable(name, this, b.source, counters);
    this.allocator = new SlotAllocator(table, waiters);
    this.batcher =
        new ReleaseBatcher(
            name,
            table,
            allocator,
            b.releaser,
            counters,
            b.maxReleaseBatch,
            this::onSegmentKilled,
            b.ticker);
    this.refiller = new Refiller(this, b, table, allocator, waiters, batcher, counters);
    this.maintenance = new Maintenance(b, table, batcher, refiller, waiters);
    this.slowPath = new AllocationWait(b, table, allocator, waiters, batcher, refiller, counters);
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
    maintenance.thread().start();
    refiller.thread().start();
  }

  /** The pool's name (its DataNode endpoint). */
  public String name() {
    return name;
  }

  /**
   * A free slot, VALID set and everything else clear. Lock-free and I/O-free while the pool has
   * free slots. When it has none but releases are pending, this thread tells the DataNode about a
   * batch of them (one {@link SlotReleaser} call per at most the maximum batch) and takes one; when
   * nothing is pending it waits at most the configured maximum allocation wait for a slot to be
   * freed or a segment to arrive. It returns or throws within the maximum wait plus one segment's
   * release calls that it started before the wait ran out ({@link AllocationWait} has the bound).
   *
   * @throws SlotPoolExhaustedException when no slot became free in time (the reader proceeds
   *     without one)
   * @throws SlotPoolClosedException when the pool is closed
   * @throws InterruptedIOException when interrupted while waiting (interrupt status restored)
   */
  public Slot allocate() throws IOException {
    Slot slot = tryAllocate();
    if (slot == null) {
      return slowPath.allocate();
    }
    allocations.increment();
    return slot;
  }

  /**
   * Releases a slot the DataNode registered (it was sent with a REQUEST_SHORT_CIRCUIT_FDS that
   * succeeded). O(1) on the caller's thread: one atomic OR, and no I/O; the DataNode is told later
   * (by the maintenance thread, or by an allocating caller that finds the pool otherwise empty) and
   * the slot is reusable after that. The caller must not touch the slot afterwards. After {@link
   * #close()} it instead frees pending slots locally and returns empty segments, on this thread.
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
      // Nobody is about to take this word: make sure someone will tell it.
      if (maintenance.isIdle()) {
        maintenance.signal();
      }
      if (waiters.hasWaiters()) {
        // The oldest waiter tells this release itself rather than wait for a background thread.
        waiters.unparkOldestWaiting();
      }
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
    if (table.isClosed()) {
      processAfterClose();
      return;
    }
    if (waiters.hasWaiters()) {
      allocator.serveWaitersFromBitmap();
    }
    if (entry.state() != PooledSegment.ACTIVE) {
      maintenance.signal();
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
    switch (table.disconnect(id)) {
      case REMEMBERED:
        LOG.debug("Segment {} of {} disconnected before the pool adopted it", id, name);
        return true;
      case KILLED:
        counters.segmentsDisconnected.incrementAndGet();
        LOG.info("Segment {} of {} disconnected; its slots are invalid", id, name);
        onSegmentKilled();
        return true;
      default:
        return false;
    }
  }

  /**
   * The caller knows the segment source answers again (the DataNode came back): a fetch backing off
   * after failures retries at once. Any thread; never blocks.
   */
  public void sourceAnswers() {
    refiller.sourceAnswers();
  }

  /** A segment died: the maintenance thread returns it when empty, the refiller replaces it. */
  private void onSegmentKilled() {
    maintenance.signal();
    refiller.signal();
  }

  /**
   * A free word ran dry (once per 64 allocations, on the allocating thread): make sure the pool
   * grows if it runs low.
   */
  void onFreeWordExhausted() {
    refiller.checkWatermark();
  }

  /** Wakes the maintenance thread (tests use it to run a pass now). */
  void signalMaintenance() {
    maintenance.signal();
  }

  /** A snapshot of the counters and gauges; cheap enough for a metrics poll, not for a read. */
  public SlotPoolStats stats() {
    return table.stats(batcher.inFlight());
  }

  /**
   * Stops the background threads, invalidates every slot, and returns every segment to the source:
   * the empty ones now, the others when their last holder releases. Idempotent. Waiting allocators
   * get {@link SlotPoolClosedException}.
   */
  @Override
  public void close() {
    if (!table.close()) {
      return;
    }
    LockSupport.unpark(maintenance.thread());
    refiller.thread().interrupt();
    joinQuietly(maintenance.thread());
    joinQuietly(refiller.thread());
    waiters.unparkAll();
    table.killAll();
    processAfterClose();
  }

  private static void joinQuietly(Thread thread) {
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
    for (PooledSegment entry : table.live()) {
      if (entry.pendingCount() > 0) {
        batcher.releasePending(entry);
      }
    }
    table.returnEmptySegments();
  }

  @Override
  public String toString() {
    return "SlotPool{" + name + (table.isClosed() ? ", closed}" : "}");
  }

  public static final class Builder {
    // Package-private: the pool's parts read their settings from the builder when it builds.
    final String name;
    final SegmentSource source;
    final SlotReleaser releaser;
    int lowWatermark = 64;
    int highWatermark = -1;
    int maxSegments = 256;
    Duration maxAllocationWait = Duration.ofMillis(50);
    Duration releaseBatchDelay = Duration.ofMillis(2);
    int maxReleaseBatch = 128;
    Duration initialFetchBackoff = Duration.ofMillis(100);
    Duration maxFetchBackoff = Duration.ofSeconds(10);
    LongSupplier ticker = System::nanoTime;
    boolean firstFetchOnBuild;
    String maxAllocationWaitName = "the slot pool's maximum allocation wait";
    String lowWatermarkName = "its low watermark";
    ThreadFactory threadFactory =
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
     * Longest an allocation waits when no slot is free. A caller that tells pending releases itself
     * may overrun it by the one segment's releaser calls it started before the wait ran out (each
     * bounded by the releaser's own I/O timeout); it starts none after. Default 50 ms; zero never
     * queues (the caller still tells one segment's pending releases first).
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

    /**
     * Whether {@link #build()} makes the pool's first {@link SegmentSource#fetch()} itself, on the
     * building thread, before it starts the pool's threads (only with a low watermark above zero).
     * A pool built by its first reader then serves that reader from the segment its own thread
     * fetched, as stock fetches a client's first segment on the reader's thread; without, the
     * reader waits for the new refill thread to be scheduled, then for its fetch. A failed first
     * fetch is counted, logged and backed off as the refill thread's would be, and {@code build()}
     * returns the pool anyway. Default false: {@code build()} does no I/O.
     */
    public Builder firstFetchOnBuild(boolean onBuild) {
      this.firstFetchOnBuild = onBuild;
      return this;
    }

    /**
     * How the exhaustion message names the two settings it tells the user to raise: the caller's
     * configuration keys for {@link #maxAllocationWait} and {@link #lowWatermark}. Default: a plain
     * description of each ("the slot pool's maximum allocation wait", "its low watermark").
     */
    public Builder settingNames(String maxAllocationWait, String lowWatermark) {
      if (maxAllocationWait == null || lowWatermark == null) {
        throw new NullPointerException("maxAllocationWait and lowWatermark names are required");
      }
      this.maxAllocationWaitName = maxAllocationWait;
      this.lowWatermarkName = lowWatermark;
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

    /**
     * Builds the pool and starts its threads, which fetch up to the low watermark at once (after
     * the first fetch this thread makes, with {@link #firstFetchOnBuild}).
     */
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
      if (firstFetchOnBuild && lowWatermark > 0) {
        pool.refiller.fetchFirst();
      }
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
