package io.scr.shm;

/**
 * A snapshot of a {@link SlotPool}'s counters and gauges. Gauges (slots, segments) are read without
 * stopping allocators, so under load they are consistent only to within the operations in flight;
 * counters are monotonic. Immutable.
 */
public final class SlotPoolStats {
  private final String poolName;
  private final int slotsInUse;
  private final int slotsFree;
  private final int slotsPendingRelease;
  private final int segments;
  private final long allocations;
  private final long releases;
  private final long allocationsThatWaited;
  private final long allocationTimeouts;
  private final long segmentFetches;
  private final long segmentFetchFailures;
  private final long segmentsReturned;
  private final long segmentsDisconnected;
  private final long releaseBatches;
  private final long releaseFailures;
  private final long callerReleaseBatches;
  private final long waitP50Nanos;
  private final long waitP99Nanos;
  private final long waitP999Nanos;
  private final long waitMaxNanos;

  SlotPoolStats(String poolName, int[] gauges, long[] counters, long[] waitPercentiles) {
    this.poolName = poolName;
    this.slotsInUse = gauges[0];
    this.slotsFree = gauges[1];
    this.slotsPendingRelease = gauges[2];
    this.segments = gauges[3];
    this.allocations = counters[0];
    this.releases = counters[1];
    this.allocationsThatWaited = counters[2];
    this.allocationTimeouts = counters[3];
    this.segmentFetches = counters[4];
    this.segmentFetchFailures = counters[5];
    this.segmentsReturned = counters[6];
    this.segmentsDisconnected = counters[7];
    this.releaseBatches = counters[8];
    this.releaseFailures = counters[9];
    this.callerReleaseBatches = counters[10];
    this.waitP50Nanos = waitPercentiles[0];
    this.waitP99Nanos = waitPercentiles[1];
    this.waitP999Nanos = waitPercentiles[2];
    this.waitMaxNanos = waitPercentiles[3];
  }

  /** The pool's name (its DataNode endpoint). */
  public String poolName() {
    return poolName;
  }

  /** Slots held by readers (allocated, not yet released). */
  public int slotsInUse() {
    return slotsInUse;
  }

  /** Slots ready to allocate now. */
  public int slotsFree() {
    return slotsFree;
  }

  /** Slots released by readers whose release the DataNode has not yet acknowledged. */
  public int slotsPendingRelease() {
    return slotsPendingRelease;
  }

  /** Segments the pool holds (allocatable, draining or disconnected but not yet returned). */
  public int segments() {
    return segments;
  }

  /** Successful allocations. */
  public long allocations() {
    return allocations;
  }

  /** Releases by readers (both kinds). */
  public long releases() {
    return releases;
  }

  /**
   * Allocations that found no free slot and got one on the slow path: by telling pending releases
   * themselves, or after waiting.
   */
  public long allocationsThatWaited() {
    return allocationsThatWaited;
  }

  /** Allocations that gave up with {@link SlotPoolExhaustedException}. */
  public long allocationTimeouts() {
    return allocationTimeouts;
  }

  /** Segments fetched from the source. */
  public long segmentFetches() {
    return segmentFetches;
  }

  /** Failed fetches. */
  public long segmentFetchFailures() {
    return segmentFetchFailures;
  }

  /** Segments handed back to the source. */
  public long segmentsReturned() {
    return segmentsReturned;
  }

  /** Segments given up because their peer disconnected or a release failed. */
  public long segmentsDisconnected() {
    return segmentsDisconnected;
  }

  /** Calls to the {@link SlotReleaser}. */
  public long releaseBatches() {
    return releaseBatches;
  }

  /** Calls to the {@link SlotReleaser} that failed. */
  public long releaseFailures() {
    return releaseFailures;
  }

  /**
   * Calls to the {@link SlotReleaser} made on an allocating caller's thread because the pool had no
   * free slot but had pending releases (part of {@link #releaseBatches()}). Frequent ones mean the
   * pool is small for the allocation rate or the background thread is short of CPU.
   */
  public long callerReleaseBatches() {
    return callerReleaseBatches;
  }

  /** Median allocation wait, ns (allocations that did not wait count as 0). */
  public long allocationWaitP50Nanos() {
    return waitP50Nanos;
  }

  /** 99th percentile allocation wait, ns. */
  public long allocationWaitP99Nanos() {
    return waitP99Nanos;
  }

  /** 99.9th percentile allocation wait, ns. */
  public long allocationWaitP999Nanos() {
    return waitP999Nanos;
  }

  /** Longest allocation wait, ns. */
  public long allocationWaitMaxNanos() {
    return waitMaxNanos;
  }

  @Override
  public String toString() {
    return "SlotPoolStats{"
        + poolName
        + ": inUse="
        + slotsInUse
        + ", free="
        + slotsFree
        + ", pendingRelease="
        + slotsPendingRelease
        + ", segments="
        + segments
        + ", allocations="
        + allocations
        + ", releases="
        + releases
        + ", waited="
        + allocationsThatWaited
        + ", timeouts="
        + allocationTimeouts
        + ", fetches="
        + segmentFetches
        + ", fetchFailures="
        + segmentFetchFailures
        + ", returned="
        + segmentsReturned
        + ", disconnected="
        + segmentsDisconnected
        + ", releaseBatches="
        + releaseBatches
        + ", releaseFailures="
        + releaseFailures
        + ", callerReleaseBatches="
        + callerReleaseBatches
        + ", waitNs{p50="
        + waitP50Nanos
        + ", p99="
        + waitP99Nanos
        + ", p99.9="
        + waitP999Nanos
        + ", max="
        + waitMaxNanos
        + "}}";
  }
}
