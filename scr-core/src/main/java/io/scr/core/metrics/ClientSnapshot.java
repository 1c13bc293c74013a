package io.scr.core.metrics;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.FallbackReason;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import io.scr.core.stats.PathCounters;
import io.scr.shm.SlotPoolStats;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Every figure of one client context at one instant: what {@link ScrClientMetrics} publishes and
 * what {@link SummaryReporter} turns into rates. Counters are monotonic since the engine started;
 * gauges are current values. Immutable.
 */
public final class ClientSnapshot {
  final String context;
  final long takenAtNanos;
  final long reads;
  final long bytes;
  final long checksumFailures;
  final EnumMap<FallbackReason, Long> fallbacks;
  final LeaseCacheStats cache;
  final List<SlotPoolStats> slotPools;
  final List<BackoffStatus> backoff;
  final List<HealthStatus> health;
  final List<PathFigures> paths;
  final long socketConnects;
  final long socketConnectFailures;
  final long socketReuses;
  final long socketStaleRetries;
  final int socketIdle;
  final long releaseRequestsOp88;
  final long releaseRequestsBatched;
  final long releasesBatched;
  final long replicasPrefetched;
  final long prefetchSkipped;
  final long mappedReads;
  final long mappedReadFallbacks;
  final int mappedReadMappings;
  final long prefetchHits;
  final long extensionProbes;
  final int extensionPeers;
  final long extensionFailures;
  final long tailStateRequests;
  final long tailFallbacks;
  final long absentReplicasRemembered;
  final long absentReplicaRequestsAvoided;
  final long replicasOrphaned;
  final long replicasRevalidated;
  final long orphansDropped;
  final long orphanedReads;
  final long orphanedBytes;
  final int orphanedReplicas;
  final ClientCounters.Latency replicaOpen;
  final EnumMap<ClientCounters.OpenPhase, ClientCounters.Latency> openPhases;
  final long processOpenFds;
  final long processFdLimit;

  ClientSnapshot(Builder b) {
    this.context = b.context;
    this.takenAtNanos = b.takenAtNanos;
    long r = 0;
    long by = 0;
    long cf = 0;
    for (PathFigures p : b.paths) {
      r += p.reads;
      by += p.bytes;
      cf += p.checksumFailures;
    }
    this.reads = r;
    this.bytes = by;
    this.checksumFailures = cf;
    this.fallbacks = new EnumMap<>(b.fallbacks);
    this.cache = b.cache;
    this.slotPools = Collections.unmodifiableList(b.slotPools);
    this.backoff = Collections.unmodifiableList(b.backoff);
    this.health = Collections.unmodifiableList(b.health);
    this.paths = Collections.unmodifiableList(b.paths);
    this.socketConnects = b.socketConnects;
    this.socketConnectFailures = b.socketConnectFailures;
    this.socketReuses = b.socketReuses;
    this.socketStaleRetries = b.socketStaleRetries;
    this.socketIdle = b.socketIdle;
    this.releaseRequestsOp88 = b.releaseRequestsOp88;
    this.releaseRequestsBatched = b.releaseRequestsBatched;
    this.releasesBatched = b.releasesBatched;
    this.replicasPrefetched = b.replicasPrefetched;
    this.prefetchSkipped = b.prefetchSkipped;
    this.mappedReads = b.mappedReads;
    this.mappedReadFallbacks = b.mappedReadFallbacks;
    this.mappedReadMappings = b.mappedReadMappings;
    this.prefetchHits = b.prefetchHits;
    this.extensionProbes = b.extensionProbes;
    this.extensionPeers = b.extensionPeers;
    this.extensionFailures = b.extensionFailures;
    this.tailStateRequests = b.tailStateRequests;
    this.tailFallbacks = b.tailFallbacks;
    this.absentReplicasRemembered = b.absentReplicasRemembered;
    this.absentReplicaRequestsAvoided = b.absentReplicaRequestsAvoided;
    this.replicasOrphaned = b.replicasOrphaned;
    this.replicasRevalidated = b.replicasRevalidated;
    this.orphansDropped = b.orphansDropped;
    this.orphanedReads = b.orphanedReads;
    this.orphanedBytes = b.orphanedBytes;
    this.orphanedReplicas = b.orphanedReplicas;
    this.replicaOpen = b.replicaOpen;
    this.openPhases = new EnumMap<>(b.openPhases);
    this.processOpenFds = b.processOpenFds;
    this.processFdLimit = b.processFdLimit;
  }

  /** The client context. */
  public String context() {
    return context;
  }

  /** Short-circuit read calls that returned data. */
  public long shortCircuitReads() {
    return reads;
  }

  /** Bytes read short-circuit. */
  public long shortCircuitBytes() {
    return bytes;
  }

  /** Checksum mismatches on short-circuit reads. */
  public long checksumFailures() {
    return checksumFailures;
  }

  /** Reads that went the stock way, by reason. */
  public Map<FallbackReason, Long> fallbacks() {
    return Collections.unmodifiableMap(fallbacks);
  }

  /** Sum of {@link #fallbacks()}. */
  public long fallbackTotal() {
    long n = 0;
    for (long v : fallbacks.values()) {
      n += v;
    }
    return n;
  }

  /** The open-replica cache's counters. */
  public LeaseCacheStats cache() {
    return cache;
  }

  /** One entry per DataNode socket path that has a slot pool. */
  public List<SlotPoolStats> slotPools() {
    return slotPools;
  }

  /** Per-path, per-failure-class backoff state. */
  public List<BackoffStatus> backoff() {
    return backoff;
  }

  /** Per-path short-circuit figures. */
  public List<PathFigures> paths() {
    return paths;
  }

  /** Domain-socket connections opened. */
  public long socketConnects() {
    return socketConnects;
  }

  /** Domain-socket connects that failed. */
  public long socketConnectFailures() {
    return socketConnectFailures;
  }

  /** Op-88 release requests sent (one slot each). */
  public long releaseRequestsOp88() {
    return releaseRequestsOp88;
  }

  /** Op-127 BATCH_RELEASE requests sent. */
  public long releaseRequestsBatched() {
    return releaseRequestsBatched;
  }

  /** Slots released through op-127 BATCH_RELEASE requests. */
  public long releasesBatched() {
    return releasesBatched;
  }

  /**
   * Replicas a prefetch on open opened whose first reader lease found them open, or waited for the
   * prefetch's open instead of asking the DataNode itself: replica opens taken off readers.
   */
  public long prefetchHits() {
    return prefetchHits;
  }

  /** Replicas prefetches on open opened (replicas found open already are not counted). */
  public long replicasPrefetched() {
    return replicasPrefetched;
  }

  /**
   * Blocks prefetches on open did not open: queue full, cache full or above half its fd budget,
   * stream closed first, or the open failed (the read then opens it as without prefetch).
   */
  public long prefetchSkipped() {
    return prefetchSkipped;
  }

  /** Reads served by a copy from a block-file mapping, without a pread. */
  public long mappedReads() {
    return mappedReads;
  }

  /** Reads of hot replicas served by pread because their block file could not be mapped. */
  public long mappedReadFallbacks() {
    return mappedReadFallbacks;
  }

  /** Block files mapped now for mapped reads. */
  public int mappedReadMappings() {
    return mappedReadMappings;
  }

  /**
   * Fd requests a local DataNode refused because it holds no such replica, remembered so that it is
   * not asked again for that block (see {@code io.scr.core.internal.replica.AbsentReplicas}).
   */
  public long absentReplicasRemembered() {
    return absentReplicasRemembered;
  }

  /** Open replicas that went on reading after their DataNode went away, since start. */
  public long replicasOrphaned() {
    return replicasOrphaned;
  }

  /** Orphaned replicas a DataNode back on their socket vouched for again (new slot, same files). */
  public long replicasRevalidated() {
    return replicasRevalidated;
  }

  /** Orphaned replicas dropped: files changed, replica gone, or aged out. */
  public long orphansDropped() {
    return orphansDropped;
  }

  /** Short-circuit read calls served by orphaned replicas. */
  public long orphanedReads() {
    return orphanedReads;
  }

  /** Bytes read short-circuit from orphaned replicas. */
  public long orphanedBytes() {
    return orphanedBytes;
  }

  /** Open replicas orphaned now. */
  public int orphanedReplicas() {
    return orphanedReplicas;
  }

  /** Fd requests not sent because the DataNode had refused that block as absent recently. */
  public long absentReplicaRequestsAvoided() {
    return absentReplicaRequestsAvoided;
  }

  /** Op-127 HELLO probes sent. */
  public long extensionProbes() {
    return extensionProbes;
  }

  /** Socket paths whose DataNode offers the scr extensions. */
  public int extensionPeers() {
    return extensionPeers;
  }

  /** Extension requests the DataNode closed the connection on. */
  public long extensionFailures() {
    return extensionFailures;
  }

  /** REPLICA_STATE requests about blocks being written. */
  public long tailStateRequests() {
    return tailStateRequests;
  }

  /** Reads of blocks being written that left bytes to the stock read for the writer's reason. */
  public long tailFallbacks() {
    return tailFallbacks;
  }

  /** Replica open latency since start. */
  public ClientCounters.Latency replicaOpenLatency() {
    return replicaOpen;
  }

  /**
   * How long {@code phase} took in successful replica opens since start (zeros before the first
   * open).
   */
  public ClientCounters.Latency replicaOpenPhase(ClientCounters.OpenPhase phase) {
    ClientCounters.Latency l = openPhases.get(phase);
    return l != null ? l : ClientCounters.Latency.NONE;
  }

  /** Fds the process holds, or -1 if unknown. */
  public long processOpenFds() {
    return processOpenFds;
  }

  /** The process's RLIMIT_NOFILE soft limit, or -1 if unknown. */
  public long processFdLimit() {
    return processFdLimit;
  }

  /** The health of the DataNode sockets this engine asked for replicas (process-wide state). */
  public List<HealthStatus> health() {
    return health;
  }

  /** Local DataNode sockets that are not healthy now. */
  public int dataNodesNotHealthy() {
    int n = 0;
    for (HealthStatus s : health) {
      if (s.state() != HealthState.HEALTHY) {
        n++;
      }
    }
    return n;
  }

  /** Number of socket paths backing off now. */
  public int pathsBackingOff() {
    java.util.Set<String> out = new java.util.HashSet<>();
    for (BackoffStatus s : backoff) {
      if (s.remainingBackoffNanos() > 0 && s.failureClass().disablesPath()) {
        out.add(s.path());
      }
    }
    return out.size();
  }

  /** One socket path's short-circuit figures. Immutable. */
  public static final class PathFigures {
    final String path;
    final long reads;
    final long bytes;
    final long opens;
    final long checksumFailures;

    PathFigures(PathCounters c) {
      this.path = c.path();
      this.reads = c.reads();
      this.bytes = c.bytes();
      this.opens = c.opens();
      this.checksumFailures = c.checksumFailures();
    }

    /** The socket path. */
    public String path() {
      return path;
    }

    /** Short-circuit read calls served by replicas of this path. */
    public long reads() {
      return reads;
    }

    /** Bytes read from replicas of this path. */
    public long bytes() {
      return bytes;
    }

    /** Replicas opened through this path. */
    public long opens() {
      return opens;
    }

    /** Checksum mismatches on replicas of this path. */
    public long checksumFailures() {
      return checksumFailures;
    }
  }

  static final class Builder {
    String context;
    long takenAtNanos;
    EnumMap<FallbackReason, Long> fallbacks = new EnumMap<>(FallbackReason.class);
    LeaseCacheStats cache;
    List<SlotPoolStats> slotPools = Collections.emptyList();
    List<BackoffStatus> backoff = Collections.emptyList();
    List<HealthStatus> health = Collections.emptyList();
    List<PathFigures> paths = Collections.emptyList();
    long socketConnects;
    long socketConnectFailures;
    long socketReuses;
    long socketStaleRetries;
    int socketIdle;
    long releaseRequestsOp88;
    long releaseRequestsBatched;
    long releasesBatched;
    long replicasPrefetched;
    long prefetchSkipped;
    long mappedReads;
    long mappedReadFallbacks;
    int mappedReadMappings;
    long prefetchHits;
    long extensionProbes;
    int extensionPeers;
    long extensionFailures;
    long tailStateRequests;
    long tailFallbacks;
    long absentReplicasRemembered;
    long absentReplicaRequestsAvoided;
    long replicasOrphaned;
    long replicasRevalidated;
    long orphansDropped;
    long orphanedReads;
    long orphanedBytes;
    int orphanedReplicas;
    ClientCounters.Latency replicaOpen = ClientCounters.Latency.NONE;
    EnumMap<ClientCounters.OpenPhase, ClientCounters.Latency> openPhases =
        new EnumMap<>(ClientCounters.OpenPhase.class);
    long processOpenFds = -1;
    long processFdLimit = -1;

    ClientSnapshot build() {
      return new ClientSnapshot(this);
    }
  }
}
