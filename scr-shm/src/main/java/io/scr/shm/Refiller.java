package io.scr.shm;

import io.scr.shm.internal.FailureLog;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The size of one {@link SlotPool}: the refill thread that fetches segments (low watermark, growth
 * on a release backlog, backoff after failures) and the rule for returning surplus (high watermark,
 * held back after a backlog wait).
 *
 * <p><b>Concurrency contract.</b> One thread at a time calls {@link SegmentSource#fetch()}: the
 * building thread for the {@linkplain #fetchFirst first fetch}, then the refill thread, which is
 * started after it returns; the fetching thread {@link #adopt}s the result through the {@link
 * SegmentTable} (the segment lock, briefly; never held during the fetch); a segment the table
 * refuses is handed back to the source from that thread. The fetch streak and {@code failures} are
 * confined to the fetching thread. Any thread may ask for a segment: {@link #checkWatermark} (an
 * allocator that emptied a free word, the maintenance thread) and {@link #requestGrowth} (a caller
 * about to park); both only set atomics and unpark this thread. {@code segmentsWanted} is raised by
 * CAS to the largest request and lowered by one per fetched segment. {@link #retireSurplus} runs on
 * the maintenance thread only. {@code lastBacklogWaitNanos} and {@code slotsPerSegment} are
 * volatile hints: a stale value shifts one decision by one pass.
 */
final class Refiller {
  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);

  /** Slots in a stock segment; the growth estimate until the first segment arrives. */
  private static final int STOCK_SLOTS_PER_SEGMENT = 128;

  /** Slots per word of a free bitmap: at most this many allocations between two level checks. */
  private static final int SLOTS_PER_CHECK = 64;

  private static final long SURPLUS_HOLD_NANOS =
      TimeUnit.MILLISECONDS.toNanos(SlotPool.SURPLUS_HOLD_MILLIS);

  /** The pool whose segments these are (each {@link PooledSegment} names it). */
  private final SlotPool owner;

  private final String name;
  private final SegmentTable table;
  private final SlotAllocator allocator;
  private final HandOffQueue<Slot> waiters;
  private final ReleaseBatcher batcher;
  private final PoolCounters counters;
  private final SegmentSource source;
  private final LongSupplier ticker;

  /**
   * Free + pending + in-flight below which the refill thread fetches: the low watermark plus one
   * check interval. Allocators check the level only when they empty a 64-slot word of a segment's
   * free bitmap (a per-allocation scan would put every segment's bitmap on the hot path), so the
   * level can drop by up to 64 between two checks. Fetching at {@code lowWatermark} alone let a
   * 128-slot segment read 64 (not below) at one check and 0 at the next: the allocation after every
   * segment's last slot waited for a whole fetch (ReplicaOpenBenchmark, up to 50 ms). Zero when the
   * low watermark is zero (fetch on demand only).
   */
  final int refillLevel;

  private final int highWatermark;
  private final int maxSegments;
  private final long initialBackoffNanos;
  private final long maxBackoffNanos;
  private final Thread thread;
  private final AtomicBoolean wake = new AtomicBoolean();

  /** Set by {@link #sourceAnswers}; the refill thread consumes it and resets its backoff. */
  private final AtomicBoolean retryNow = new AtomicBoolean();

  private final FailureLog failures = new FailureLog();

  /** Segments to add because callers waited on a release backlog. */
  private final AtomicInteger segmentsWanted = new AtomicInteger();

  /** When a caller last parked while releases were pending or in flight; NOT_PENDING if never. */
  private volatile long lastBacklogWaitNanos = SlotPool.NOT_PENDING;

  /** Slots per segment of the last adopted segment: converts a backlog into segments. */
  private volatile int slotsPerSegment = STOCK_SLOTS_PER_SEGMENT;

  Refiller(
      SlotPool owner,
      SlotPool.Builder b,
      SegmentTable table,
      SlotAllocator allocator,
      HandOffQueue<Slot> waiters,
      ReleaseBatcher batcher,
      PoolCounters counters) {
    this.owner = owner;
    this.name = b.name;
    this.table = table;
    this.allocator = allocator;
    this.waiters = waiters;
    this.batcher = batcher;
    this.counters = counters;
    this.source = b.source;
    this.ticker = b.ticker;
    this.refillLevel = b.lowWatermark == 0 ? 0 : b.lowWatermark + SLOTS_PER_CHECK;
    this.highWatermark = b.highWatermark;
    this.maxSegments = b.maxSegments;
    this.initialBackoffNanos = b.initialFetchBackoff.toNanos();
    this.maxBackoffNanos = b.maxFetchBackoff.toNanos();
    this.thread = b.threadFactory.newThread(this::refillLoop);
    thread.setName("scr-slot-pool-" + name + "-refill");
    newStreak();
  }

  Thread thread() {
    return thread;
  }

  /** Fetch if the pool runs low (see {@link #refillLevel}); any thread, never blocks. */
  void checkWatermark() {
    if (needsSegment()) {
      signal();
    }
  }

  void signal() {
    if (!wake.get() && wake.compareAndSet(false, true)) {
      LockSupport.unpark(thread);
    }
  }

  /**
   * The source is known to answer again (any thread): a fetch that is backing off starts a new
   * streak at once instead of sleeping out a backoff doubled while the source was away.
   */
  void sourceAnswers() {
    retryNow.set(true);
    LockSupport.unpark(thread);
  }

  /** A caller is about to park: grow by the segments the release backlog fills. */
  void requestGrowth() {
    int backlog = table.pendingSlots() + batcher.inFlight();
    if (backlog > 0) {
      lastBacklogWaitNanos = ticker.getAsLong();
    }
    int perSegment = slotsPerSegment;
    int want = Math.max(1, (backlog + perSegment - 1) / perSegment);
    int current;
    do {
      current = segmentsWanted.get();
    } while (current < want && !segmentsWanted.compareAndSet(current, want));
    signal();
  }

  /**
   * Whether to fetch: callers waited on a backlog the pool is too small for, or free, pending and
   * in-flight slots together are below the refill level.
   */
  private boolean needsSegment() {
    if (table.isClosed() || table.live().length >= maxSegments) {
      return false;
    }
    if (segmentsWanted.get() > 0) {
      if (waiters.hasWaiters() || table.freeSlots() < refillLevel) {
        return true;
      }
      segmentsWanted.set(0); // the waiters were served otherwise
    }
    return !table.atLeastAvailable(refillLevel, batcher.inFlight());
  }

  /**
   * Maintenance thread: retires wholly free segments while free slots exceed the high watermark,
   * unless a caller recently waited on a release backlog; returns how long that hold still lasts (0
   * if none).
   */
  long retireSurplus(long now) {
    long lastWait = lastBacklogWaitNanos;
    if (lastWait != SlotPool.NOT_PENDING && now - lastWait < SURPLUS_HOLD_NANOS) {
      return table.freeSlots() > highWatermark ? SURPLUS_HOLD_NANOS - (now - lastWait) : 0;
    }
    while (true) {
      PooledSegment[] segments = table.active();
      int free = table.freeSlots();
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
      table.retire(candidate);
    }
  }

  /**
   * A failure outside a fetch (an {@code Error} in bookkeeping, or thrown by {@link
   * SegmentSource#returnSegment}) is logged once (rate-limited) and the loop goes on: a dead refill
   * thread would leave the pool unable to grow, silently.
   */
  private void refillLoop() {
    while (!table.isClosed() && !sourceClosed) {
      try {
        refillUntilClosed();
      } catch (RuntimeException | Error e) {
        table.endFetch();
        newStreak();
        long pause =
            failures.failed(
                LOG,
                "Slot pool " + name + " refill thread",
                e,
                ticker.getAsLong(),
                SlotPool.MAX_FAILURE_PAUSE_NANOS);
        LockSupport.parkNanos(this, pause);
      }
    }
  }

  /**
   * Set by the fetching thread when the source said it is shutting down; ends the refill thread.
   */
  private boolean sourceClosed;

  /**
   * The fetch streak: failures in a row, the current backoff and when the next fetch may start.
   * Confined to the thread that fetches: the builder's thread for the {@linkplain #fetchFirst first
   * fetch}, then the refill thread, which is started after it (a happens-before edge).
   */
  private int failuresInARow;

  private long backoff;
  private long nextFetchAt;

  /**
   * The pool's first fetch, on the building thread before the pool's threads start (as stock
   * fetches its first segment on the reader's thread): the first allocation then waits for the
   * exchange alone, not for a new thread to be scheduled first. A failure is counted, logged and
   * backed off exactly as the refill thread's would be, and the refill thread retries after it.
   */
  void fetchFirst() {
    try {
      fetchOne();
    } catch (RuntimeException | Error e) {
      table.endFetch();
      failures.failed(LOG, "Slot pool " + name + " first fetch", e, ticker.getAsLong(), 0);
    }
  }

  /** The start of a fetch streak: no failures, the initial backoff, fetch at once. */
  private void newStreak() {
    failuresInARow = 0;
    backoff = initialBackoffNanos;
    nextFetchAt = ticker.getAsLong();
  }

  private void refillUntilClosed() {
    while (!table.isClosed() && !sourceClosed) {
      wake.set(false);
      if (retryNow.getAndSet(false) && failuresInARow > 0) {
        backoff = initialBackoffNanos;
        nextFetchAt = ticker.getAsLong();
      }
      if (!needsSegment()) {
        if (!wake.get() && !table.isClosed()) {
          LockSupport.park(this);
        }
        continue;
      }
      long now = ticker.getAsLong();
      if (now - nextFetchAt < 0) {
        LockSupport.parkNanos(this, nextFetchAt - now);
        continue;
      }
      fetchOne();
    }
  }

  /**
   * One {@link SegmentSource#fetch()} and what follows it: adoption, or the failure counted, logged
   * (once per streak) and backed off. Sets {@link #sourceClosed} when the source has shut down.
   */
  private void fetchOne() {
    Segment segment;
    table.startFetch();
    try {
      segment = source.fetch();
    } catch (IOException | RuntimeException | Error e) {
      // An Error (OutOfMemoryError, LinkageError from the native stack) is a failed fetch too:
      // the refill thread must outlive it, or the pool silently never grows again.
      table.endFetch();
      if (e instanceof SlotPoolClosedException) {
        sourceClosed = true; // no segment will ever come from it again
      }
      if (Thread.currentThread() != thread && Interrupts.isOwnInterrupt(e)) {
        // The first fetch, on a reader that was interrupted meanwhile: that reader's outcome, not
        // the source's. Nothing is counted or backed off; the refill thread fetches at once.
        LOG.debug(
            "The first segment fetch for {} was interrupted; the refill thread retries", name);
        return;
      }
      if (table.isClosed() || sourceClosed) {
        // The pool (or its source: the client engine closing first) closed under the fetch (its
        // close interrupts this thread, which closes the fetch's channel): the end of the pool,
        // not a failure to report.
        LOG.debug("Fetching a shared-memory segment for {} ended by the pool's close", name);
        return;
      }
      counters.segmentFetchFailures.incrementAndGet();
      counters.lastFetchFailure = e;
      nextFetchAt = ticker.getAsLong() + backoff;
      // The first failure of a streak is a warning with its cause; the retries of the same
      // streak (every few seconds while, say, the DataNode refuses shared memory) are debug.
      if (e instanceof Error) {
        // Never silent, never a flood: first in full, then once a minute.
        failures.failed(
            LOG, "Fetching a shared-memory segment for " + name, e, ticker.getAsLong(), 0);
        failuresInARow++;
      } else if (failuresInARow++ == 0) {
        // An I/O failure (DataNode down or restarting, refused shared memory) says all in its
        // message; a stack trace would read as a crash. Anything else keeps its trace.
        String message =
            "Fetching a shared-memory segment for {} failed; retrying in {} ms (later failures"
                + " in a row are logged at DEBUG): {}";
        long millis = TimeUnit.NANOSECONDS.toMillis(backoff);
        if (e instanceof IOException) {
          LOG.warn(message, name, millis, e.toString());
        } else {
          LOG.warn(message, name, millis, e.toString(), e);
        }
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
      return;
    }
    if (segment == null || segment.isClosed()) {
      table.endFetch();
      counters.segmentFetchFailures.incrementAndGet();
      counters.lastFetchFailure = new IOException("segment source returned " + segment);
      nextFetchAt = ticker.getAsLong() + backoff;
      return;
    }
    if (failuresInARow > 0) {
      LOG.info(
          "Fetching shared-memory segments for {} works again after {} failures",
          name,
          failuresInARow);
      failuresInARow = 0;
    }
    counters.segmentFetches.incrementAndGet();
    int wanted;
    do {
      wanted = segmentsWanted.get();
    } while (wanted > 0 && !segmentsWanted.compareAndSet(wanted, wanted - 1));
    if (adopt(segment, backoff == initialBackoffNanos) == SegmentTable.Adoption.DISCONNECTED) {
      // The peer dropped it at once: back off as after a failure, so a DataNode that keeps
      // doing so is neither hammered nor floods the log (only a streak's first is at INFO).
      nextFetchAt = ticker.getAsLong() + backoff;
      backoff = Math.min(maxBackoffNanos, backoff * 2);
    } else {
      backoff = initialBackoffNanos;
    }
    if (failures.inARow() > 0) {
      failures.succeeded(LOG, "Fetching shared-memory segments for " + name);
    }
  }

  /**
   * Puts a fetched segment into allocation and serves waiters from it; hands it straight back (from
   * this thread) if the pool closed or the segment was reported disconnected while it was being
   * fetched. Ends the fetch in flight.
   */
  private SegmentTable.Adoption adopt(Segment segment, boolean logAtInfo) {
    SegmentTable.Adoption result = table.adopt(new PooledSegment(owner, segment));
    if (result == SegmentTable.Adoption.ADOPTED) {
      slotsPerSegment = Math.max(1, segment.slotCount());
      allocator.serveWaitersFromBitmap();
      return result;
    }
    if (result == SegmentTable.Adoption.DISCONNECTED) {
      counters.segmentsDisconnected.incrementAndGet();
      String message =
          "Segment {} of {} disconnected before the pool adopted it; handing it back and"
              + " fetching another";
      if (logAtInfo) {
        LOG.info(message, segment.id(), name);
      } else {
        LOG.debug(message, segment.id(), name);
      }
    } else if (!table.isClosed()) {
      LOG.warn("Source of {} returned segment {} twice; handing it back", name, segment.id());
    }
    table.handBack(segment);
    return result;
  }
}
