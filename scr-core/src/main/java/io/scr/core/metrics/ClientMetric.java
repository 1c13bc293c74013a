package io.scr.core.metrics;

import io.scr.config.MetricKey;
import io.scr.core.FallbackReason;
import io.scr.core.ScrKeys;
import io.scr.core.stats.FailureClass;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.lib.Interns;

/**
 * The catalogue of metrics {@link ScrClientMetrics} publishes: name, kind (counter or gauge), unit
 * and description. Record {@link #RECORD} holds the context totals; record {@link #PATH_RECORD}
 * (tag {@code Path}) one set per DataNode socket path. {@code docs/metrics.md} lists every name
 * from {@link #all()}; a test fails when they disagree.
 */
public enum ClientMetric {
  // ---- reads ----
  SHORT_CIRCUIT_READS(
      MetricKey.counter(
          "ShortCircuitReads", "reads", "Short-circuit read calls that returned data")),
  SHORT_CIRCUIT_BYTES(MetricKey.counter("ShortCircuitBytes", "bytes", "Bytes read short-circuit")),
  FALLBACK_TOTAL(
      MetricKey.counter("FallbackTotal", "reads", "Reads sent the stock way, all reasons")),
  CHECKSUM_FAILURES(
      MetricKey.counter(
          "ChecksumFailures", "errors", "Checksum mismatches found on short-circuit reads")),
  // ---- open-replica cache ----
  CACHE_HITS(MetricKey.counter("CacheHits", "lookups", "Replica leases served from the cache")),
  CACHE_MISSES(
      MetricKey.counter(
          "CacheMisses", "lookups", "Replica leases that had to open (or wait for) a replica")),
  CACHE_HIT_PERCENT(
      MetricKey.gauge("CacheHitPercent", "percent", "Hits / (hits + misses) since start, x100")),
  CACHE_LOADS(MetricKey.counter("CacheLoads", "replicas", "Replicas opened into the cache")),
  CACHE_LOAD_FAILURES(
      MetricKey.counter("CacheLoadFailures", "replicas", "Replica opens that failed")),
  CACHE_EVICTIONS_SIZE(
      MetricKey.counter(
          "CacheEvictionsSize", "replicas", "Evicted because the cache was at capacity")),
  CACHE_EVICTIONS_FD_BUDGET(
      MetricKey.counter(
          "CacheEvictionsFdBudget", "replicas", "Evicted to stay within the fd budget")),
  CACHE_EXPIRIES(MetricKey.counter("CacheExpiries", "replicas", "Closed after the idle expiry")),
  CACHE_INVALIDATIONS(
      MetricKey.counter(
          "CacheInvalidations",
          "replicas",
          "Removed by invalidation (checksum error, new generation stamp)")),
  CACHE_STALE(
      MetricKey.counter(
          "CacheStale",
          "replicas",
          "Removed because the DataNode cleared the slot or the replica aged out")),
  CACHE_ENTRIES(MetricKey.gauge("CacheEntries", "replicas", "Open replicas cached now")),
  CACHE_LEASED_ENTRIES(
      MetricKey.gauge("CacheLeasedEntries", "replicas", "Cached replicas with a read in progress")),
  CACHE_CAPACITY(MetricKey.gauge("CacheCapacity", "replicas", "Cache capacity")),
  CACHE_OPEN_FDS(
      MetricKey.gauge("CacheOpenFds", "fds", "Fds held by cached replicas (and awaiting close)")),
  CACHE_FD_BUDGET(MetricKey.gauge("CacheFdBudget", "fds", "Most fds the cache may hold")),
  CACHE_THRASH_WARNINGS(
      MetricKey.counter("CacheThrashWarnings", "warnings", "Thrash warnings logged by the cache")),
  CACHE_RECOMMENDED_CAPACITY(
      MetricKey.gauge(
          "CacheRecommendedCapacity",
          "replicas",
          "Capacity the thrash detector estimates the working set needs (0: no thrash seen)")),
  PROCESS_OPEN_FDS(
      MetricKey.gauge("ProcessOpenFds", "fds", "Fds the whole process holds (-1: unknown)")),
  PROCESS_FD_LIMIT(
      MetricKey.gauge(
          "ProcessFdLimit", "fds", "RLIMIT_NOFILE soft limit of the process (-1: unknown)")),
  // ---- slot pools, summed over DataNodes (percentiles: the worst pool) ----
  SLOTS_IN_USE(MetricKey.gauge("SlotsInUse", "slots", "Shared-memory slots held by open replicas")),
  SLOTS_FREE(MetricKey.gauge("SlotsFree", "slots", "Slots ready to allocate")),
  SLOTS_PENDING_RELEASE(
      MetricKey.gauge(
          "SlotsPendingRelease", "slots", "Released slots the DataNode has not acknowledged yet")),
  SLOT_SEGMENTS(MetricKey.gauge("SlotSegments", "segments", "Shared-memory segments held")),
  SLOT_ALLOCATIONS(MetricKey.counter("SlotAllocations", "slots", "Slots allocated")),
  SLOT_ALLOCATIONS_WAITED(
      MetricKey.counter(
          "SlotAllocationsWaited", "slots", "Allocations that found the pool empty and waited")),
  SLOT_ALLOCATION_TIMEOUTS(
      MetricKey.counter(
          "SlotAllocationTimeouts",
          "slots",
          "Allocations that gave up (replica opened without a slot)")),
  SLOT_ALLOCATION_WAIT_P50(
      MetricKey.gauge(
          "SlotAllocationWaitP50Micros",
          "microseconds",
          "Median slot allocation wait since start")),
  SLOT_ALLOCATION_WAIT_P99(
      MetricKey.gauge(
          "SlotAllocationWaitP99Micros",
          "microseconds",
          "99th percentile slot allocation wait since start")),
  SLOT_SEGMENT_FETCHES(
      MetricKey.counter(
          "SlotSegmentFetches", "segments", "Segments requested from DataNodes (op 89)")),
  SLOT_SEGMENT_FETCH_FAILURES(
      MetricKey.counter("SlotSegmentFetchFailures", "segments", "Segment requests that failed")),
  SLOT_SEGMENTS_DISCONNECTED(
      MetricKey.counter(
          "SlotSegmentsDisconnected",
          "segments",
          "Segments lost because the DataNode closed them (restart) or a release failed")),
  SLOT_RELEASES(MetricKey.counter("SlotReleases", "slots", "Slots released by readers")),
  SLOT_RELEASE_FAILURES(
      MetricKey.counter(
          "SlotReleaseFailures",
          "batches",
          "Release batches (op 88 or op-127 BATCH_RELEASE) that failed")),
  SLOT_RELEASE_REQUESTS_OP88(
      MetricKey.counter(
          "SlotReleaseRequestsOp88",
          "requests",
          "Op-88 release requests sent (one slot and one round trip each)")),
  SLOT_RELEASE_REQUESTS_BATCHED(
      MetricKey.counter(
          "SlotReleaseRequestsBatched",
          "requests",
          "Op-127 BATCH_RELEASE requests sent to scr shims (one round trip each)")),
  SLOT_RELEASES_BATCHED(
      MetricKey.counter(
          "SlotReleasesBatched", "slots", "Slots released through op-127 BATCH_RELEASE requests")),
  // ---- prefetch on open ----
  REPLICAS_PREFETCHED(
      MetricKey.counter(
          "ReplicasPrefetched",
          "replicas",
          "Replicas opened ahead when a stream opened their file (a replica already open is not"
              + " counted)")),
  PREFETCH_SKIPPED(
      MetricKey.counter(
          "PrefetchSkipped",
          "blocks",
          "Local blocks a prefetch on open did not open (queue full, cache full or above half its fd"
              + " budget, stream closed first, open failed, a scanning reader took over)")),
  // ---- mapped reads (scr.client.read.mapped.enabled) ----
  MAPPED_READS(
      MetricKey.counter(
          "MappedReads",
          "reads",
          "Reads served by a copy from a block-file mapping, no pread (0 while mapped reads are off)")),
  MAPPED_READ_FALLBACKS(
      MetricKey.counter(
          "MappedReadFallbacks",
          "reads",
          "Reads of hot replicas served by pread because their block file could not be mapped"
              + " (mapping budget full, mapping failed, past 2 GiB into the block)")),
  MAPPED_READ_MAPPINGS(
      MetricKey.gauge(
          "MappedReadMappings",
          "mappings",
          "Block files mapped now for mapped reads (charged to their budget)")),
  PREFETCH_HITS(
      MetricKey.counter(
          "PrefetchHits",
          "replicas",
          "Prefetched replicas whose first read found them open, or waited for the prefetch's open"
              + " instead of asking the DataNode again: replica opens taken off the reading threads")),
  // ---- replicas local DataNodes do not hold ----
  ABSENT_REPLICAS_REMEMBERED(
      MetricKey.counter(
          "AbsentReplicasRemembered",
          "requests",
          "Fd requests a local DataNode refused because it holds no such replica (remembered, not asked"
              + " again for that block)")),
  ABSENT_REPLICA_REQUESTS_AVOIDED(
      MetricKey.counter(
          "AbsentReplicaRequestsAvoided",
          "requests",
          "Fd requests not sent because that DataNode refused the block as absent recently")),
  // ---- open replicas outliving their DataNode (scr.replica.outlive.datanode) ----
  REPLICAS_ORPHANED(
      MetricKey.counter(
          "ReplicasOrphaned",
          "replicas",
          "Open replicas that went on reading short-circuit after their DataNode process went away"
              + " (its segment closed with their slots still valid, or torn down whole)")),
  ORPHANED_REPLICAS(
      MetricKey.gauge(
          "OrphanedReplicas",
          "replicas",
          "Open replicas read now without a DataNode vouching for them (0 when every local DataNode is"
              + " up)")),
  ORPHANED_READS(
      MetricKey.counter(
          "OrphanedReads",
          "reads",
          "Short-circuit read calls served by orphaned replicas (checksums verified)")),
  ORPHANED_BYTES(
      MetricKey.counter(
          "OrphanedBytes", "bytes", "Bytes read short-circuit from orphaned replicas")),
  REPLICAS_REVALIDATED(
      MetricKey.counter(
          "ReplicasRevalidated",
          "replicas",
          "Orphaned replicas a DataNode back on their socket vouched for again (same files, new slot):"
              + " kept open instead of reopened")),
  ORPHANS_DROPPED(
      MetricKey.counter(
          "OrphansDropped",
          "replicas",
          "Orphaned replicas dropped: the DataNode back passed other files, holds no such replica, or"
              + " none came back within "
              + ScrKeys.REPLICA_STALE_THRESHOLD_MS.name())),
  // ---- protocol extensions ----
  EXTENSION_PROBES(
      MetricKey.counter(
          "ExtensionProbes",
          "probes",
          "HELLO probes sent (one per socket path and DataNode start)")),
  EXTENSION_PEERS(
      MetricKey.gauge(
          "ExtensionPeers",
          "paths",
          "Socket paths whose DataNode offers the scr extensions (an scr shim)")),
  EXTENSION_FAILURES(
      MetricKey.counter(
          "ExtensionFailures",
          "requests",
          "Extension requests the DataNode closed the connection on (path then stock until restart)")),
  // ---- files being written ----
  TAIL_STATE_REQUESTS(
      MetricKey.counter(
          "TailStateRequests",
          "requests",
          "REPLICA_STATE requests to a DataNode with the scr shim about a block being written (tail"
              + " checksum snapshots, visible lengths measured on open or at a stream's end), over the"
              + " UNIX socket instead of TCP")),
  TAIL_FALLBACKS(
      MetricKey.counter(
          "TailFallbacks",
          "reads",
          "Reads of a block being written that left bytes to the stock read for a reason of the"
              + " writer's (not on disk yet, tail moving, replica recovered)")),
  // ---- domain-socket pool ----
  SOCKET_CONNECTS(
      MetricKey.counter("SocketConnects", "connections", "Domain-socket connections opened")),
  SOCKET_CONNECT_FAILURES(
      MetricKey.counter(
          "SocketConnectFailures", "connections", "Domain-socket connects that failed")),
  SOCKET_REUSES(
      MetricKey.counter("SocketReuses", "exchanges", "Exchanges served by a pooled connection")),
  SOCKET_STALE_RETRIES(
      MetricKey.counter(
          "SocketStaleRetries",
          "exchanges",
          "Exchanges retried because a pooled connection was stale")),
  SOCKET_IDLE_CONNECTIONS(
      MetricKey.gauge("SocketIdleConnections", "connections", "Idle pooled connections")),
  PATHS_BACKING_OFF(
      MetricKey.gauge("PathsBackingOff", "paths", "Socket paths skipped now after a failure")),
  // ---- replica opens ----
  REPLICA_OPENS(MetricKey.counter("ReplicaOpens", "replicas", "Replicas opened (fds received)")),
  REPLICA_OPEN_P50(
      MetricKey.gauge(
          "ReplicaOpenLatencyP50Micros",
          "microseconds",
          "Median replica open time (slot, op 87, fds, meta header) since start")),
  REPLICA_OPEN_P99(
      MetricKey.gauge(
          "ReplicaOpenLatencyP99Micros",
          "microseconds",
          "99th percentile replica open time since start")),
  REPLICA_OPEN_MAX(
      MetricKey.gauge(
          "ReplicaOpenLatencyMaxMicros", "microseconds", "Longest replica open since start")),
  REPLICA_OPEN_SLOT_P99(
      MetricKey.gauge(
          "ReplicaOpenSlotP99Micros",
          "microseconds",
          "99th percentile of the slot allocation part of replica opens since start")),
  REPLICA_OPEN_EXCHANGE_P99(
      MetricKey.gauge(
          "ReplicaOpenExchangeP99Micros",
          "microseconds",
          "99th percentile of the op-87 round trip (request, fds, receipt) of replica opens")),
  REPLICA_OPEN_FILES_P99(
      MetricKey.gauge(
          "ReplicaOpenFilesP99Micros",
          "microseconds",
          "99th percentile of the meta header read and checksum mapping of replica opens")),
  DATANODES_NOT_HEALTHY(
      MetricKey.gauge(
          "DataNodesNotHealthy",
          "datanodes",
          "Local DataNode sockets this context reads from that are suspect, unresponsive or dead now")),
  // ---- per path (record ScrClientPath, tag Path) ----
  PATH_READS(
      MetricKey.counter(
          "ShortCircuitReads", "reads", "Short-circuit read calls served by replicas of this path"),
      true),
  PATH_BYTES(
      MetricKey.counter("ShortCircuitBytes", "bytes", "Bytes read from replicas of this path"),
      true),
  PATH_OPENS(
      MetricKey.counter("ReplicaOpens", "replicas", "Replicas opened through this path"), true),
  PATH_CHECKSUM_FAILURES(
      MetricKey.counter(
          "ChecksumFailures", "errors", "Checksum mismatches on replicas of this path"),
      true),
  PATH_BACKING_OFF(
      MetricKey.gauge("BackingOff", "0/1", "1 while the path is skipped after a failure"), true),
  PATH_BACKOFF_REMAINING(
      MetricKey.gauge(
          "BackoffRemainingMs",
          "milliseconds",
          "Time until the longest running backoff of the path ends"),
      true),
  PATH_SLOTS_IN_USE(
      MetricKey.gauge("SlotsInUse", "slots", "Slots of this DataNode held by open replicas"), true),
  PATH_SLOTS_FREE(MetricKey.gauge("SlotsFree", "slots", "Free slots of this DataNode"), true),
  PATH_SLOT_SEGMENTS(
      MetricKey.gauge("SlotSegments", "segments", "Segments of this DataNode"), true),
  PATH_HEALTH_STATE(
      MetricKey.gauge(
          "HealthState",
          "state",
          "The DataNode's health, process-wide: 0 healthy, 1 suspect, 2 unresponsive, 3 dead"),
      true),
  PATH_HEALTH_DEADLINE(
      MetricKey.gauge(
          "HealthDeadlineMs",
          "milliseconds",
          "How long a replica open waits for this DataNode's answer now"),
      true),
  PATH_HEALTH_TRANSITIONS(
      MetricKey.counter(
          "HealthTransitions",
          "transitions",
          "Changes of the DataNode's health state since the process started"),
      true),
  PATH_HEALTH_UNRESPONSIVE(
      MetricKey.counter(
          "HealthBecameUnresponsive",
          "transitions",
          "Times the DataNode became unresponsive (each logged with one WARN)"),
      true),
  PATH_HEALTH_DEAD(
      MetricKey.counter("HealthBecameDead", "transitions", "Times the DataNode was found dead"),
      true),
  PATH_HEALTH_PROBES(
      MetricKey.counter(
          "HealthProbes", "probes", "Liveness probes sent while the DataNode was not healthy"),
      true);

  /** The record of the context totals. */
  public static final String RECORD = "ScrClient";

  /** The record of one socket path (tag {@code Path}). */
  public static final String PATH_RECORD = "ScrClientPath";

  private final MetricKey key;
  private final boolean perPath;

  ClientMetric(MetricKey key) {
    this(key, false);
  }

  ClientMetric(MetricKey key, boolean perPath) {
    this.key = key;
    this.perPath = perPath;
  }

  /** Name, kind, unit and description. */
  public MetricKey key() {
    return key;
  }

  /** The metric's name as sinks and JMX show it. */
  public String metricName() {
    return key.name();
  }

  /** Whether the metric belongs to the per-path record. */
  public boolean perPath() {
    return perPath;
  }

  /** The metrics2 name and description. */
  public MetricsInfo info() {
    return Interns.info(key.name(), key.description());
  }

  /** The counter of reads that fell back for {@code reason}: {@code Fallback<Reason>}. */
  public static MetricsInfo fallback(FallbackReason reason) {
    return Interns.info(
        "Fallback" + MetricKey.camel(reason.name()),
        "Reads sent the stock way because " + reason + " (reads)");
  }

  /** The per-path counter of failures of {@code failureClass}: {@code Failures<Class>}. */
  public static MetricsInfo failures(FailureClass failureClass) {
    return Interns.info(
        "Failures" + MetricKey.camel(failureClass.name()),
        "Failures of class " + failureClass + " on this path (failures)");
  }

  /** Every metric name of record {@code RECORD} (or {@code PATH_RECORD}), dynamic ones included. */
  public static List<String> names(boolean perPath) {
    List<String> out = new ArrayList<>();
    for (ClientMetric m : values()) {
      if (m.perPath == perPath) {
        out.add(m.key.name());
      }
    }
    if (perPath) {
      for (FailureClass c : FailureClass.values()) {
        out.add(failures(c).name());
      }
    } else {
      for (FallbackReason r : FallbackReason.values()) {
        out.add(fallback(r).name());
      }
    }
    return out;
  }
}
