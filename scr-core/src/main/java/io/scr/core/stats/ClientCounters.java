package io.scr.core.stats;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The counters one client context's data plane updates: per socket path ({@link PathCounters}) and
 * the replica open latency (the time from a cache miss to an open replica: slot, op 87, fds,
 * receipt, meta header), recorded in an HdrHistogram {@link Recorder}.
 *
 * <p>Thread-safety: thread-safe. {@link #path} is a concurrent-map lookup, done once per replica
 * open (the replica keeps the result). {@link #recordReplicaOpen} is the Recorder's wait-free
 * record. {@link #replicaOpenLatency()} folds the Recorder's interval into a cumulative histogram
 * under this object's monitor, taken only by metrics readers.
 */
public final class ClientCounters {
  private static final long MAX_TRACKED_NANOS = TimeUnit.MINUTES.toNanos(10);

  private final ConcurrentHashMap<String, PathCounters> paths = new ConcurrentHashMap<>();
  private final Recorder openLatency = new Recorder(MAX_TRACKED_NANOS, 2);

  @GuardedBy("this")
  private final Histogram openLatencyTotal = new Histogram(MAX_TRACKED_NANOS, 2);

  @GuardedBy("this")
  private Histogram interval;

  /** The parts of a replica open, timed separately to show where its time goes. */
  public enum OpenPhase {
    /** Taking a shared-memory slot from the path's pool (waits when the pool is empty). */
    SLOT,
    /** Op 87 on a pooled connection: request, response, the two fds and the receipt byte. */
    EXCHANGE,
    /** The meta header read and the meta file mapped (or read). */
    FILES
  }

  private final Recorder[] phaseLatency = new Recorder[OpenPhase.values().length];

  @GuardedBy("this")
  private final Histogram[] phaseTotal = new Histogram[OpenPhase.values().length];

  @GuardedBy("this")
  private final Histogram[] phaseInterval = new Histogram[OpenPhase.values().length];

  private final LongAdder stockReleaseRequests = new LongAdder();
  private final LongAdder batchedReleaseRequests = new LongAdder();
  private final LongAdder batchedReleaseSlots = new LongAdder();
  private final LongAdder prefetched = new LongAdder();
  private final LongAdder prefetchSkipped = new LongAdder();
  private final LongAdder prefetchHits = new LongAdder();
  private final LongAdder replicasOrphaned = new LongAdder();
  private final LongAdder replicasRevalidated = new LongAdder();
  private final LongAdder orphansDropped = new LongAdder();
  private final LongAdder orphanedReads = new LongAdder();
  private final LongAdder orphanedBytes = new LongAdder();

  /** Empty counters. */
  public ClientCounters() {
    for (int i = 0; i < phaseLatency.length; i++) {
      phaseLatency[i] = new Recorder(MAX_TRACKED_NANOS, 2);
      synchronized (this) {
        phaseTotal[i] = new Histogram(MAX_TRACKED_NANOS, 2);
      }
    }
  }

  /** Records that {@code phase} of a successful replica open took {@code nanos}. */
  public void recordOpenPhase(OpenPhase phase, long nanos) {
    phaseLatency[phase.ordinal()].recordValue(Math.min(Math.max(0, nanos), MAX_TRACKED_NANOS));
  }

  /** The time {@code phase} took in successful replica opens since the engine started. */
  public synchronized Latency openPhaseLatency(OpenPhase phase) {
    int i = phase.ordinal();
    phaseInterval[i] = phaseLatency[i].getIntervalHistogram(phaseInterval[i]);
    phaseTotal[i].add(phaseInterval[i]);
    Histogram h = phaseTotal[i];
    return new Latency(
        h.getTotalCount(), h.getValueAtPercentile(50), h.getValueAtPercentile(99), h.getMaxValue());
  }

  /** The counters of {@code socketPath}, created on first use. */
  public PathCounters path(String socketPath) {
    PathCounters c = paths.get(socketPath);
    return c != null ? c : paths.computeIfAbsent(socketPath, PathCounters::new);
  }

  /** Every path's counters, in no particular order. */
  public List<PathCounters> paths() {
    return new ArrayList<>(paths.values());
  }

  /** Records one replica open that took {@code nanos} (successful or not). */
  public void recordReplicaOpen(long nanos) {
    openLatency.recordValue(Math.min(Math.max(0, nanos), MAX_TRACKED_NANOS));
  }

  /** Records slot releases told to a DataNode: {@code requests} op-88 requests, one slot each. */
  public void recordStockReleases(int requests) {
    stockReleaseRequests.add(requests);
  }

  /** Records {@code slots} slot releases told in {@code requests} op-127 BATCH_RELEASE requests. */
  public void recordBatchedReleases(int requests, int slots) {
    batchedReleaseRequests.add(requests);
    batchedReleaseSlots.add(slots);
  }

  /** Records {@code replicas} open replicas that went on reading after their DataNode went away. */
  public void recordOrphaned(int replicas) {
    replicasOrphaned.add(replicas);
  }

  /** Records one orphaned replica a DataNode back on its socket vouched for again. */
  public void recordRevalidated() {
    replicasRevalidated.increment();
  }

  /** Records one orphaned replica dropped: its files changed, it is gone, or it aged out. */
  public void recordOrphanDropped() {
    orphansDropped.increment();
  }

  /** Records one read call of an orphaned replica that returned {@code bytes} bytes. */
  public void recordOrphanedRead(int bytes) {
    orphanedReads.increment();
    orphanedBytes.add(bytes);
  }

  /** Open replicas orphaned since start (their DataNode went away while they were open). */
  public long replicasOrphaned() {
    return replicasOrphaned.sum();
  }

  /** Orphaned replicas re-validated by a DataNode back on their socket. */
  public long replicasRevalidated() {
    return replicasRevalidated.sum();
  }

  /** Orphaned replicas dropped (files changed, replica gone, aged out). */
  public long orphansDropped() {
    return orphansDropped.sum();
  }

  /** Short-circuit read calls served by orphaned replicas. */
  public long orphanedReads() {
    return orphanedReads.sum();
  }

  /** Bytes read short-circuit from orphaned replicas. */
  public long orphanedBytes() {
    return orphanedBytes.sum();
  }

  /** Records a reader's first lease of a replica a prefetch on open opened. */
  public void recordPrefetchHit() {
    prefetchHits.increment();
  }

  /** Replicas a prefetch on open opened whose first reader found them opened (or opening). */
  public long prefetchHits() {
    return prefetchHits.sum();
  }

  /** Records one replica a prefetch on open opened. */
  public void recordPrefetched() {
    prefetched.increment();
  }

  /** Records {@code blocks} blocks a prefetch on open did not open. */
  public void recordPrefetchSkipped(int blocks) {
    prefetchSkipped.add(blocks);
  }

  /** Replicas prefetches on open opened (not counting those found open already). */
  public long prefetched() {
    return prefetched.sum();
  }

  /** Blocks prefetches on open skipped (queue or cache full, fd budget, stream closed, failure). */
  public long prefetchSkipped() {
    return prefetchSkipped.sum();
  }

  /** Op-88 requests sent (one slot each, one round trip each). */
  public long stockReleaseRequests() {
    return stockReleaseRequests.sum();
  }

  /** Op-127 BATCH_RELEASE requests sent (one round trip each). */
  public long batchedReleaseRequests() {
    return batchedReleaseRequests.sum();
  }

  /** Slots released through op-127 BATCH_RELEASE requests. */
  public long batchedReleaseSlots() {
    return batchedReleaseSlots.sum();
  }

  /** Replica open latency since the engine started. */
  public synchronized Latency replicaOpenLatency() {
    interval = openLatency.getIntervalHistogram(interval);
    openLatencyTotal.add(interval);
    return new Latency(
        openLatencyTotal.getTotalCount(),
        openLatencyTotal.getValueAtPercentile(50),
        openLatencyTotal.getValueAtPercentile(99),
        openLatencyTotal.getMaxValue());
  }

  /** Sum of every path's short-circuit read calls. */
  public long reads() {
    long n = 0;
    for (PathCounters c : paths.values()) {
      n += c.reads();
    }
    return n;
  }

  /** Sum of every path's short-circuit bytes. */
  public long bytes() {
    long n = 0;
    for (PathCounters c : paths.values()) {
      n += c.bytes();
    }
    return n;
  }

  /** Sum of every path's checksum failures. */
  public long checksumFailures() {
    long n = 0;
    for (PathCounters c : paths.values()) {
      n += c.checksumFailures();
    }
    return n;
  }

  /** A latency distribution: count, p50, p99 and maximum in nanoseconds. Immutable. */
  public static final class Latency {
    /** No samples yet. */
    public static final Latency NONE = new Latency(0, 0, 0, 0);

    private final long count;
    private final long p50Nanos;
    private final long p99Nanos;
    private final long maxNanos;

    Latency(long count, long p50Nanos, long p99Nanos, long maxNanos) {
      this.count = count;
      this.p50Nanos = p50Nanos;
      this.p99Nanos = p99Nanos;
      this.maxNanos = maxNanos;
    }

    /** Values recorded. */
    public long count() {
      return count;
    }

    /** Median, ns (0 when empty). */
    public long p50Nanos() {
      return p50Nanos;
    }

    /** 99th percentile, ns (0 when empty). */
    public long p99Nanos() {
      return p99Nanos;
    }

    /** Largest value, ns (0 when empty). */
    public long maxNanos() {
      return maxNanos;
    }
  }
}
