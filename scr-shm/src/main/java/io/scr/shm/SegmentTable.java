package io.scr.shm;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The segments of one {@link SlotPool}: which segments it holds, the state of each ({@link
 * PooledSegment}: ACTIVE → RETIRED/DEAD → RETURNED), disconnects reported while a fetch is in
 * flight, and the pool's closed flag. It owns the rule that keeps segment memory safe: <em>touch a
 * segment's slots only while holding one of its bits (claimed from free or taken from pending);
 * return a segment to the source only when it is not ACTIVE and every bit is free</em>. So a
 * claimed bit keeps its segment mapped, whatever the table does meanwhile. The one exception is
 * killing a segment, which invalidates every slot while holding the segment lock instead, since
 * returning a segment takes that lock too.
 *
 * <p><b>Concurrency contract.</b> The pool's segment lock ({@link ActiveSegments#segmentLock}, held
 * in the pool object so that the fast paths' fields and the lock that orders their writes live
 * together) guards membership ({@link #byId}, the writes of both arrays), every state transition,
 * the fetch bookkeeping and the closed flag's write. The arrays are copy-on-write and volatile, so
 * allocators, releasers and gauges scan them without the lock and may see a stale array (handled by
 * {@link PooledSegment#tryClaim}'s state re-check). Under the lock this class calls only code that
 * neither blocks nor takes a lock: {@link PooledSegment}'s state CAS and bitmap reads, and, when a
 * segment dies, {@link Segment#invalidateAll} (a CAS loop per slot word of the mapped memory, which
 * only the peer's own CASes contend). The invalidation must happen under the lock: the lock is what
 * keeps {@link #returnEmptySegments} from handing the segment back (and unmapping it) while its
 * words are written. The source is called only after the lock is released, and nothing called under
 * it calls back into the pool, so the lock cannot be part of a deadlock. Threads that take it: the
 * refill thread (fetch start/end, {@link #adopt}); the maintenance thread (retiring surplus,
 * returning empty segments); whoever reports a disconnect ({@link SlotPool#segmentDisconnected},
 * any thread); a caller or the maintenance thread whose releaser call failed ({@link #kill}); the
 * closing thread; and, after close, every thread that releases a slot (returning what became
 * empty). None of these is the allocation or release fast path.
 */
final class SegmentTable {
  private static final Logger LOG = LoggerFactory.getLogger(SlotPool.class);
  private static final PooledSegment[] NO_SEGMENTS = ActiveSegments.NO_SEGMENTS;

  private final String name;
  private final SegmentSource source;
  private final PoolCounters counters;

  /**
   * Where the ACTIVE array, the closed flag and the segment lock live: in the pool object, which
   * the fast paths dereference anyway ({@link ActiveSegments}).
   */
  private final ActiveSegments fast;

  /**
   * Every segment not yet returned; copy-on-write, written under the segment lock, read without it
   * (lock-free scans).
   */
  private volatile PooledSegment[] live = NO_SEGMENTS;

  @GuardedBy("fast.segmentLock")
  private final Map<ShmId, PooledSegment> byId = new HashMap<>();

  /**
   * A fetch is between {@link SegmentSource#fetch()} and {@link #adopt}: a disconnect of an unknown
   * segment may be of the segment in flight (a source that watches its peer from {@code fetch}).
   */
  @GuardedBy("fast.segmentLock")
  private boolean fetching;

  /**
   * Segments reported disconnected while {@link #fetching} and not in the pool: the fetch in flight
   * is not adopted if it is one of them. Cleared when the fetch ends, so it stays tiny.
   */
  @GuardedBy("fast.segmentLock")
  private final List<ShmId> disconnectedWhileFetching = new ArrayList<>(1);

  SegmentTable(String name, ActiveSegments fast, SegmentSource source, PoolCounters counters) {
    this.name = name;
    this.fast = fast;
    this.source = source;
    this.counters = counters;
  }

  /** The allocation fast path ({@link ActiveSegments#tryAllocate}), for the pool's other parts. */
  Slot tryAllocate() {
    return fast.tryAllocate();
  }

  /** {@code entry} has free slots again: start the next scan there if it is lower. */
  void lowerHint(PooledSegment entry) {
    fast.lowerHint(entry);
  }

  PooledSegment[] active() {
    return fast.active;
  }

  PooledSegment[] live() {
    return live;
  }

  boolean isClosed() {
    return fast.closed;
  }

  /** Marks the table closed; false if it already was. Nothing is adopted afterwards. */
  boolean close() {
    fast.segmentLock.lock();
    try {
      if (fast.closed) {
        return false;
      }
      fast.markClosed();
      return true;
    } finally {
      fast.segmentLock.unlock();
    }
  }

  /** What {@link #disconnect} found. */
  enum Disconnect {
    /** The segment was ACTIVE or RETIRED and is now DEAD. */
    KILLED,
    /** Unknown while a fetch is in flight: remembered, that fetch will not be adopted. */
    REMEMBERED,
    /** Not held (already returned, already dead, or never fetched) and nothing in flight. */
    UNKNOWN
  }

  /** The peer dropped segment {@code id}: kill it, or remember it for the fetch in flight. */
  Disconnect disconnect(ShmId id) {
    fast.segmentLock.lock();
    try {
      PooledSegment entry = byId.get(id);
      if (entry == null) {
        if (fetching && !fast.closed) {
          disconnectedWhileFetching.add(id);
          return Disconnect.REMEMBERED;
        }
        return Disconnect.UNKNOWN;
      }
      return killLocked(entry) ? Disconnect.KILLED : Disconnect.UNKNOWN;
    } finally {
      fast.segmentLock.unlock();
    }
  }

  /** ACTIVE/RETIRED → DEAD, out of allocation, every slot invalid; false if it was neither. */
  boolean kill(PooledSegment entry) {
    fast.segmentLock.lock();
    try {
      return killLocked(entry);
    } finally {
      fast.segmentLock.unlock();
    }
  }

  @GuardedBy("fast.segmentLock")
  private boolean killLocked(PooledSegment entry) {
    if (!entry.transition(PooledSegment.ACTIVE, PooledSegment.DEAD)
        && !entry.transition(PooledSegment.RETIRED, PooledSegment.DEAD)) {
      return false;
    }
    fast.publishActive(without(fast.active, entry));
    // Under the lock on purpose: it keeps returnEmptySegments from unmapping the segment while
    // its words are written (a CAS per slot word, no lock, no I/O).
    entry.segment.invalidateAll();
    return true;
  }

  /** Close: every segment DEAD (slots invalid), nothing allocatable. */
  void killAll() {
    fast.segmentLock.lock();
    try {
      for (PooledSegment entry : live) {
        killLocked(entry);
      }
      fast.publishActive(NO_SEGMENTS);
    } finally {
      fast.segmentLock.unlock();
    }
  }

  /** ACTIVE → RETIRED: out of allocation, still alive at the peer (surplus). */
  void retire(PooledSegment entry) {
    fast.segmentLock.lock();
    try {
      if (entry.transition(PooledSegment.ACTIVE, PooledSegment.RETIRED)) {
        fast.publishActive(without(fast.active, entry));
      }
    } finally {
      fast.segmentLock.unlock();
    }
  }

  void startFetch() {
    fast.segmentLock.lock();
    try {
      fetching = true;
    } finally {
      fast.segmentLock.unlock();
    }
  }

  void endFetch() {
    fast.segmentLock.lock();
    try {
      fetching = false;
      disconnectedWhileFetching.clear();
    } finally {
      fast.segmentLock.unlock();
    }
  }

  /** What {@link #adopt} did with a fetched segment. */
  enum Adoption {
    /** In the pool, allocatable. */
    ADOPTED,
    /** Disconnected while it was being fetched: the caller hands it back. */
    DISCONNECTED,
    /** The pool is closed, or the source handed it out twice: the caller hands it back. */
    REFUSED
  }

  /**
   * Makes {@code entry} ACTIVE and allocatable unless the table is closed, its segment is already
   * held, or it was reported disconnected during the fetch. Ends the fetch in flight.
   */
  Adoption adopt(PooledSegment entry) {
    Segment segment = entry.segment;
    fast.segmentLock.lock();
    try {
      boolean diedInFlight = disconnectedWhileFetching.contains(segment.id());
      fetching = false;
      disconnectedWhileFetching.clear();
      if (diedInFlight && !fast.closed) {
        return Adoption.DISCONNECTED;
      }
      if (fast.closed || segment.poolEntry != null || byId.containsKey(segment.id())) {
        return Adoption.REFUSED;
      }
      segment.poolEntry = entry;
      byId.put(segment.id(), entry);
      live = with(live, entry);
      fast.publishActive(with(fast.active, entry));
      return Adoption.ADOPTED;
    } finally {
      fast.segmentLock.unlock();
    }
  }

  /**
   * Returns every RETIRED or DEAD segment whose bits are all free to the source (RETURNED, exactly
   * once: the transition is the claim). The source is called after the lock is released; a source
   * that throws is logged and the segment counts as returned.
   */
  void returnEmptySegments() {
    List<Segment> toReturn = null;
    fast.segmentLock.lock();
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
      fast.segmentLock.unlock();
    }
    if (toReturn != null) {
      for (Segment segment : toReturn) {
        counters.segmentsReturned.incrementAndGet();
        try {
          source.returnSegment(segment);
        } catch (RuntimeException e) {
          LOG.warn("Returning segment {} of {} failed", segment.id(), name, e);
        }
      }
    }
  }

  /** Hands back a segment {@link #adopt} refused (on the refill thread); the source may throw. */
  void handBack(Segment segment) {
    counters.segmentsReturned.incrementAndGet();
    source.returnSegment(segment);
  }

  // ------------------------------------------------------------------ gauges (lock-free scans)

  int freeSlots() {
    int n = 0;
    for (PooledSegment entry : fast.active) {
      n += entry.freeCount();
    }
    return n;
  }

  int pendingSlots() {
    int n = 0;
    for (PooledSegment entry : live) {
      n += entry.pendingCount();
    }
    return n;
  }

  /** The pool's stats; {@code inFlight} slots are being told (counted as awaiting release). */
  SlotPoolStats stats(int inFlight) {
    PooledSegment[] segments = live;
    int notFreeNorPending = 0;
    int pending = 0;
    for (PooledSegment entry : segments) {
      notFreeNorPending += entry.notFreeNorPendingCount();
      pending += entry.pendingCount();
    }
    return counters.snapshot(
        name,
        Math.max(0, notFreeNorPending - inFlight),
        freeSlots(),
        pending + inFlight,
        segments.length);
  }

  /**
   * {@code alreadyCounted} + free + pending of ACTIVE segments ≥ n; emptiest first, stops early.
   */
  boolean atLeastAvailable(int n, int alreadyCounted) {
    int sum = alreadyCounted;
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
}
