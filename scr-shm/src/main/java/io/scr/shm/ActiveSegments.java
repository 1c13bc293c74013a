package io.scr.shm;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The state the allocation and release fast paths read, held in the {@link SlotPool} object itself
 * (the pool extends this class): the ACTIVE array, the closed flag and where the next first-fit
 * scan starts, and the segment lock that orders every write of the first two. {@link SegmentTable}
 * decides those writes (it reaches this object through the pool it was built for) and makes them
 * holding that lock. Kept here rather than in the table because the fast path then dereferences the
 * pool alone, as before the pool was split into parts: with the table in between, an
 * allocate/release pair cost one dependent load more, about 1 ns of 32 (thread CPU time per pair;
 * docs/shm.md).
 *
 * <p><b>Concurrency contract.</b> {@link #active} and {@link #closed} are volatile, written only
 * through {@link #publishActive} and {@link #markClosed}, which require {@link #segmentLock} (Error
 * Prone checks every caller), and read without a lock by any thread; the array is copy-on-write, so
 * a scan may see a stale one ({@link PooledSegment#tryClaim} re-checks the segment's state). {@link
 * #allocHint} is a plain field: racy reads and writes only move where the next scan starts, and it
 * is written only when it changes, so the fast path writes no shared line.
 */
abstract class ActiveSegments {
  static final PooledSegment[] NO_SEGMENTS = new PooledSegment[0];

  /**
   * The pool's segment lock: held for every write of {@link #active} and {@link #closed}, and by
   * {@link SegmentTable} for membership, state transitions and fetch bookkeeping. Never taken by
   * the allocation or release fast path.
   */
  final ReentrantLock segmentLock = new ReentrantLock();

  /**
   * Segments allocation scans; copy-on-write, written only by {@link #publishActive}. Read without
   * a lock (so not {@code @GuardedBy}: a reader may see the previous array).
   */
  volatile PooledSegment[] active = NO_SEGMENTS;

  /** The pool is closed; written only by {@link #markClosed}, read without a lock. */
  volatile boolean closed;

  /** Replaces the ACTIVE array (a new copy; arrays are never modified once published). */
  @GuardedBy("segmentLock")
  final void publishActive(PooledSegment[] segments) {
    active = segments;
  }

  /** Marks the pool closed; never undone. */
  @GuardedBy("segmentLock")
  final void markClosed() {
    closed = true;
  }

  /**
   * Index in the ACTIVE array where a scan starts: the lowest segment that may have free slots
   * (allocation packs low, so surplus segments at the end empty out and can be returned).
   */
  private int allocHint;

  /**
   * The allocation fast path: one first-fit scan of the ACTIVE array from the hint, wrapping
   * around; a claim is one CAS on a free-bitmap word ({@link PooledSegment#tryClaim}, which
   * re-checks the segment's state, so a stale array is harmless). Null when no active segment has a
   * free slot. Lock-free, any thread.
   */
  final Slot tryAllocate() {
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
  final void lowerHint(PooledSegment entry) {
    PooledSegment[] segments = active;
    int hint = allocHint;
    for (int i = 0; i < segments.length && i < hint; i++) {
      if (segments[i] == entry) {
        allocHint = i;
        return;
      }
    }
  }
}
