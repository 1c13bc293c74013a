package io.scr.shm;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * The counters of one {@link SlotPool}, shared by its parts. Thread-safe: every counter is atomic
 * on its own (the hot two are {@link LongAdder}s); a snapshot is not atomic across counters.
 */
final class PoolCounters {
  final LongAdder allocations = new LongAdder();
  final LongAdder releases = new LongAdder();
  final AtomicLong allocationsThatWaited = new AtomicLong();
  final AtomicLong allocationTimeouts = new AtomicLong();
  final AtomicLong segmentFetches = new AtomicLong();
  final AtomicLong segmentFetchFailures = new AtomicLong();
  final AtomicLong segmentsReturned = new AtomicLong();
  final AtomicLong segmentsDisconnected = new AtomicLong();
  final AtomicLong releaseBatches = new AtomicLong();
  final AtomicLong callerReleaseBatches = new AtomicLong();
  final AtomicLong releaseFailures = new AtomicLong();
  final Histogram waitNanos = new ConcurrentHistogram(3);

  /** The last fetch failure, attached to exhaustion errors as their cause. */
  volatile Throwable lastFetchFailure;

  /** A caller that waited {@code nanos} got a slot. */
  void waited(long nanos) {
    allocations.increment();
    allocationsThatWaited.incrementAndGet();
    waitNanos.recordValue(Math.max(0, nanos));
  }

  /** The snapshot behind {@link SlotPool#stats()}. */
  SlotPoolStats snapshot(String name, int inUse, int free, int awaitingRelease, int segments) {
    long allocs = allocations.sum();
    Histogram waits = waitNanos.copy();
    // Allocations that did not wait are not recorded one by one (the fast path stays a LongAdder
    // increment); they are the zeros of the distribution.
    waits.recordValueWithCount(0, Math.max(0, allocs - waits.getTotalCount()));
    long[] percentiles = {
      waits.getValueAtPercentile(50),
      waits.getValueAtPercentile(99),
      waits.getValueAtPercentile(99.9),
      waits.getMaxValue()
    };
    return new SlotPoolStats(
        name,
        new int[] {inUse, free, awaitingRelease, segments},
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
}
