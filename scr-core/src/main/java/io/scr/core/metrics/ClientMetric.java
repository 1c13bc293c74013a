package io.scr.core.metrics;

import io.scr.core.FallbackReason;
import io.scr.core.ScrKeys;
import io.scr.core.stats.FailureClass;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
      "ShortCircuitReads", Kind.COUNTER, "reads", "Short-circuit read calls that returned data"),
  SHORT_CIRCUIT_BYTES("ShortCircuitBytes", Kind.COUNTER, "bytes", "Bytes read short-circuit"),
  FALLBACK_TOTAL("FallbackTotal", Kind.COUNTER, "reads", "Reads sent the stock way, all reasons"),
  CHECKSUM_FAILURES(
      "ChecksumFailures",
      Kind.COUNTER,
      "errors",
      "Checksum mismatches found on short-circuit reads"),
  // ---- open-replica cache ----
  CACHE_HITS("CacheHits", Kind.COUNTER, "lookups", "Replica leases served from the cache"),
  CACHE_MISSES(
      "CacheMisses",
      Kind.COUNTER,
      "lookups",
      "Replica leases that had to open (or wait for) a replica"),
  CACHE_HIT_PERCENT(
      "CacheHitPercent", Kind.GAUGE, "percent", "Hits / (hits + misses) since start, x100"),
  CACHE_LOADS("CacheLoads", Kind.COUNTER, "replicas", "Replicas opened into the cache"),
  CACHE_LOAD_FAILURES("CacheLoadFailures", Kind.COUNTER, "replicas", "Replica opens that failed"),
  CACHE_EVICTIONS_SIZE(
      "CacheEvictionsSize", Kind.COUNTER, "replicas", "Evicted because the cache was at capacity"),
  CACHE_EVICTIONS_FD_BUDGET(
      "CacheEvictionsFdBudget", Kind.COUNTER, "replicas", "Evicted to stay within the fd budget"),
  CACHE_EXPIRIES("CacheExpiries", Kind.COUNTER, "replicas", "Closed after the idle expiry"),
  CACHE_INVALIDATIONS(
      "CacheInvalidations",
      Kind.COUNTER,
      "replicas",
      "Removed by invalidation (checksum error, new generation stamp)"),
  CACHE_STALE(
      "CacheStale",
      Kind.COUNTER,
      "replicas",
      "Removed because the DataNode cleared the slot or the replica aged out"),
  CACHE_ENTRIES("CacheEntries", Kind.GAUGE, "replicas", "Open replicas cached now"),
  CACHE_LEASED_ENTRIES(
      "CacheLeasedEntries", Kind.GAUGE, "replicas", "Cached replicas with a read in progress"),
  CACHE_CAPACITY("CacheCapacity", Kind.GAUGE, "replicas", "Cache capacity"),
  CACHE_OPEN_FDS(
      "CacheOpenFds", Kind.GAUGE, "fds", "Fds held by cached replicas (and awaiting close)"),
  CACHE_FD_BUDGET("CacheFdBudget", Kind.GAUGE, "fds", "Most fds the cache may hold"),
  CACHE_THRASH_WARNINGS(
      "CacheThrashWarnings", Kind.COUNTER, "warnings", "Thrash warnings logged by the cache"),
  CACHE_RECOMMENDED_CAPACITY(
      "CacheRecommendedCapacity",
      Kind.GAUGE,
      "replicas",
      "Capacity the thrash detector estimates the working set needs (0: no thrash seen)"),
  PROCESS_OPEN_FDS(
      "ProcessOpenFds", Kind.GAUGE, "fds", "Fds the whole process holds (-1: unknown)"),
  PROCESS_FD_LIMIT(
      "ProcessFdLimit", Kind.GAUGE, "fds", "RLIMIT_NOFILE soft limit of the process (-1: unknown)"),
  // ---- slot pools, summed over DataNodes (percentiles: the worst pool) ----
  SLOTS_IN_USE("SlotsInUse", Kind.GAUGE, "slots", "Shared-memory slots held by open replicas"),
  SLOTS_FREE("SlotsFree", Kind.GAUGE, "slots", "Slots ready to allocate"),
  SLOTS_PENDING_RELEASE(
      "SlotsPendingRelease",
      Kind.GAUGE,
      "slots",
      "Released slots the DataNode has not acknowledged yet"),
  SLOT_SEGMENTS("SlotSegments", Kind.GAUGE, "segments", "Shared-memory segments held"),
  SLOT_ALLOCATIONS("SlotAllocations", Kind.COUNTER, "slots", "Slots allocated"),
  SLOT_ALLOCATIONS_WAITED(
      "SlotAllocationsWaited",
      Kind.COUNTER,
      "slots",
      "Allocations that found the pool empty and waited"),
  SLOT_ALLOCATION_TIMEOUTS(
      "SlotAllocationTimeouts",
      Kind.COUNTER,
      "slots",
      "Allocations that gave up (replica opened without a slot)"),
  SLOT_ALLOCATION_WAIT_P50(
      "SlotAllocationWaitP50Micros",
      Kind.GAUGE,
      "microseconds",
      "Median slot allocation wait since start"),
  SLOT_ALLOCATION_WAIT_P99(
      "SlotAllocationWaitP99Micros",
      Kind.GAUGE,
      "microseconds",
      "99th percentile slot allocation wait since start"),
  SLOT_SEGMENT_FETCHES(
      "SlotSegmentFetches", Kind.COUNTER, "segments", "Segments requested from DataNodes (op 89)"),
  SLOT_SEGMENT_FETCH_FAILURES(
      "SlotSegmentFetchFailures", Kind.COUNTER, "segments", "Segment requests that failed"),
  SLOT_SEGMENTS_DISCONNECTED(
      "SlotSegmentsDisconnected",
      Kind.COUNTER,
      "segments",
      "Segments lost because the DataNode closed them (restart) or a release failed"),
  SLOT_RELEASES("SlotReleases", Kind.COUNTER, "slots", "Slots released by readers"),
  SLOT_RELEASE_FAILURES(
      "SlotReleaseFailures",
      Kind.COUNTER,
      "batches",
      "Release batches (op 88 or op-127 BATCH_RELEASE) that failed"),
  SLOT_RELEASE_REQUESTS_OP88(
      "SlotReleaseRequestsOp88",
      Kind.COUNTER,
      "requests",
      "Op-88 release requests sent (one slot and one round trip each)"),
  SLOT_RELEASE_REQUESTS_BATCHED(
      "SlotReleaseRequestsBatched",
      Kind.COUNTER,
      "requests",
      "Op-127 BATCH_RELEASE requests sent to scr shims (one round trip each)"),
  SLOT_RELEASES_BATCHED(
      "SlotReleasesBatched",
      Kind.COUNTER,
      "slots",
      "Slots released through op-127 BATCH_RELEASE requests"),
  // ---- prefetch on open ----
  REPLICAS_PREFETCHED(
      "ReplicasPrefetched",
      Kind.COUNTER,
      "replicas",
      "Replicas opened ahead when a stream opened their file (a replica already open is not"
          + " counted)"),
  PREFETCH_SKIPPED(
      "PrefetchSkipped",
      Kind.COUNTER,
      "blocks",
      "Local blocks a prefetch on open did not open (queue full, cache full or above half its fd"
          + " budget, stream closed first, open failed, a scanning reader took over)"),
  // ---- mapped reads (scr.client.read.mapped.enabled) ----
  MAPPED_READS(
      "MappedReads",
      Kind.COUNTER,
      "reads",
      "Reads served by a copy from a block-file mapping, no pread (0 while mapped reads are off)"),
  MAPPED_READ_FALLBACKS(
      "MappedReadFallbacks",
      Kind.COUNTER,
      "reads",
      "Reads of hot replicas served by pread because their block file could not be mapped"
          + " (mapping budget full, mapping failed, past 2 GiB into the block)"),
  MAPPED_READ_MAPPINGS(
      "MappedReadMappings",
      Kind.GAUGE,
      "mappings",
      "Block files mapped now for mapped reads (charged to their budget)"),
  PREFETCH_HITS(
      "PrefetchHits",
      Kind.COUNTER,
      "replicas",
      "Prefetched replicas whose first read found them open, or waited for the prefetch's open"
          + " instead of asking the DataNode again: replica opens taken off the reading threads"),
  // ---- replicas local DataNodes do not hold ----
  ABSENT_REPLICAS_REMEMBERED(
      "AbsentReplicasRemembered",
      Kind.COUNTER,
      "requests",
      "Fd requests a local DataNode refused because it holds no such replica (remembered, not asked"
          + " again for that block)"),
  ABSENT_REPLICA_REQUESTS_AVOIDED(
      "AbsentReplicaRequestsAvoided",
      Kind.COUNTER,
      "requests",
      "Fd requests not sent because that DataNode refused the block as absent recently"),
  // ---- open replicas outliving their DataNode (scr.replica.outlive.datanode) ----
  REPLICAS_ORPHANED(
      "ReplicasOrphaned",
      Kind.COUNTER,
      "replicas",
      "Open replicas that went on reading short-circuit after their DataNode process went away"
          + " (its segment closed with their slots still valid, or torn down whole)"),
  ORPHANED_REPLICAS(
      "OrphanedReplicas",
      Kind.GAUGE,
      "replicas",
      "Open replicas read now without a DataNode vouching for them (0 when every local DataNode is"
          + " up)"),
  ORPHANED_READS(
      "OrphanedReads",
      Kind.COUNTER,
      "reads",
      "Short-circuit read calls served by orphaned replicas (checksums verified)"),
  ORPHANED_BYTES(
      "OrphanedBytes", Kind.COUNTER, "bytes", "Bytes read short-circuit from orphaned replicas"),
  REPLICAS_REVALIDATED(
      "ReplicasRevalidated",
      Kind.COUNTER,
      "replicas",
      "Orphaned replicas a DataNode back on their socket vouched for again (same files, new slot):"
          + " kept open instead of reopened"),
  ORPHANS_DROPPED(
      "OrphansDropped",
      Kind.COUNTER,
      "replicas",
      "Orphaned replicas dropped: the DataNode back passed other files, holds no such replica, or"
          + " none came back within "
          + ScrKeys.REPLICA_STALE_THRESHOLD_MS.name()),
  // ---- protocol extensions ----
  EXTENSION_PROBES(
      "ExtensionProbes",
      Kind.COUNTER,
      "probes",
      "HELLO probes sent (one per socket path and DataNode start)"),
  EXTENSION_PEERS(
      "ExtensionPeers",
      Kind.GAUGE,
      "paths",
      "Socket paths whose DataNode offers the scr extensions (an scr shim)"),
  EXTENSION_FAILURES(
      "ExtensionFailures",
      Kind.COUNTER,
      "requests",
      "Extension requests the DataNode closed the connection on (path then stock until restart)"),
  // ---- files being written ----
  TAIL_STATE_REQUESTS(
      "TailStateRequests",
      Kind.COUNTER,
      "requests",
      "REPLICA_STATE requests to a DataNode with the scr shim about a block being written (tail"
          + " checksum snapshots, visible lengths measured on open or at a stream's end), over the"
          + " UNIX socket instead of TCP"),
  TAIL_FALLBACKS(
      "TailFallbacks",
      Kind.COUNTER,
      "reads",
      "Reads of a block being written that left bytes to the stock read for a reason of the"
          + " writer's (not on disk yet, tail moving, replica recovered)"),
  // ---- domain-socket pool ----
  SOCKET_CONNECTS(
      "SocketConnects", Kind.COUNTER, "connections", "Domain-socket connections opened"),
  SOCKET_CONNECT_FAILURES(
      "SocketConnectFailures", Kind.COUNTER, "connections", "Domain-socket connects that failed"),
  SOCKET_REUSES(
      "SocketReuses", Kind.COUNTER, "exchanges", "Exchanges served by a pooled connection"),
  SOCKET_STALE_RETRIES(
      "SocketStaleRetries",
      Kind.COUNTER,
      "exchanges",
      "Exchanges retried because a pooled connection was stale"),
  SOCKET_IDLE_CONNECTIONS(
      "SocketIdleConnections", Kind.GAUGE, "connections", "Idle pooled connections"),
  PATHS_BACKING_OFF(
      "PathsBackingOff", Kind.GAUGE, "paths", "Socket paths skipped now after a failure"),
  // ---- replica opens ----
  REPLICA_OPENS("ReplicaOpens", Kind.COUNTER, "replicas", "Replicas opened (fds received)"),
  REPLICA_OPEN_P50(
      "ReplicaOpenLatencyP50Micros",
      Kind.GAUGE,
      "microseconds",
      "Median replica open time (slot, op 87, fds, meta header) since start"),
  REPLICA_OPEN_P99(
      "ReplicaOpenLatencyP99Micros",
      Kind.GAUGE,
      "microseconds",
      "99th percentile replica open time since start"),
  REPLICA_OPEN_MAX(
      "ReplicaOpenLatencyMaxMicros",
      Kind.GAUGE,
      "microseconds",
      "Longest replica open since start"),
  REPLICA_OPEN_SLOT_P99(
      "ReplicaOpenSlotP99Micros",
      Kind.GAUGE,
      "microseconds",
      "99th percentile of the slot allocation part of replica opens since start"),
  REPLICA_OPEN_EXCHANGE_P99(
      "ReplicaOpenExchangeP99Micros",
      Kind.GAUGE,
      "microseconds",
      "99th percentile of the op-87 round trip (request, fds, receipt) of replica opens"),
  REPLICA_OPEN_FILES_P99(
      "ReplicaOpenFilesP99Micros",
      Kind.GAUGE,
      "microseconds",
      "99th percentile of the meta header read and checksum mapping of replica opens"),
  DATANODES_NOT_HEALTHY(
      "DataNodesNotHealthy",
      Kind.GAUGE,
      "datanodes",
      "Local DataNode sockets this context reads from that are suspect, unresponsive or dead now"),
  // ---- per path (record ScrClientPath, tag Path) ----
  PATH_READS(
      "ShortCircuitReads",
      Kind.COUNTER,
      "reads",
      "Short-circuit read calls served by replicas of this path",
      true),
  PATH_BYTES(
      "ShortCircuitBytes", Kind.COUNTER, "bytes", "Bytes read from replicas of this path", true),
  PATH_OPENS("ReplicaOpens", Kind.COUNTER, "replicas", "Replicas opened through this path", true),
  PATH_CHECKSUM_FAILURES(
      "ChecksumFailures",
      Kind.COUNTER,
      "errors",
      "Checksum mismatches on replicas of this path",
      true),
  PATH_BACKING_OFF(
      "BackingOff", Kind.GAUGE, "0/1", "1 while the path is skipped after a failure", true),
  PATH_BACKOFF_REMAINING(
      "BackoffRemainingMs",
      Kind.GAUGE,
      "milliseconds",
      "Time until the longest running backoff of the path ends",
      true),
  PATH_SLOTS_IN_USE(
      "SlotsInUse", Kind.GAUGE, "slots", "Slots of this DataNode held by open replicas", true),
  PATH_SLOTS_FREE("SlotsFree", Kind.GAUGE, "slots", "Free slots of this DataNode", true),
  PATH_SLOT_SEGMENTS("SlotSegments", Kind.GAUGE, "segments", "Segments of this DataNode", true),
  PATH_HEALTH_STATE(
      "HealthState",
      Kind.GAUGE,
      "state",
      "The DataNode's health, process-wide: 0 healthy, 1 suspect, 2 unresponsive, 3 dead",
      true),
  PATH_HEALTH_DEADLINE(
      "HealthDeadlineMs",
      Kind.GAUGE,
      "milliseconds",
      "How long a replica open waits for this DataNode's answer now",
      true),
  PATH_HEALTH_TRANSITIONS(
      "HealthTransitions",
      Kind.COUNTER,
      "transitions",
      "Changes of the DataNode's health state since the process started",
      true),
  PATH_HEALTH_UNRESPONSIVE(
      "HealthBecameUnresponsive",
      Kind.COUNTER,
      "transitions",
      "Times the DataNode became unresponsive (each logged with one WARN)",
      true),
  PATH_HEALTH_DEAD(
      "HealthBecameDead", Kind.COUNTER, "transitions", "Times the DataNode was found dead", true),
  PATH_HEALTH_PROBES(
      "HealthProbes",
      Kind.COUNTER,
      "probes",
      "Liveness probes sent while the DataNode was not healthy",
      true);

  /** The record of the context totals. */
  public static final String RECORD = "ScrClient";

  /** The record of one socket path (tag {@code Path}). */
  public static final String PATH_RECORD = "ScrClientPath";

  /** Whether a metric only grows (counter) or is a current value (gauge). */
  public enum Kind {
    /** Monotonic since the engine started. */
    COUNTER,
    /** A current value. */
    GAUGE
  }

  private final String metricName;
  private final Kind kind;
  private final String unit;
  private final String desc;
  private final boolean perPath;

  ClientMetric(String name, Kind kind, String unit, String desc) {
    this(name, kind, unit, desc, false);
  }

  ClientMetric(String name, Kind kind, String unit, String desc, boolean perPath) {
    this.metricName = name;
    this.kind = kind;
    this.unit = unit;
    this.desc = desc;
    this.perPath = perPath;
  }

  /** The metric's name as sinks and JMX show it. */
  public String metricName() {
    return metricName;
  }

  /** Counter or gauge. */
  public Kind kind() {
    return kind;
  }

  /** The unit ("bytes", "microseconds", ...). */
  public String unit() {
    return unit;
  }

  /** Whether the metric belongs to the per-path record. */
  public boolean perPath() {
    return perPath;
  }

  /** What the metric counts, with its unit. */
  public String description() {
    return desc + " (" + unit + ")";
  }

  /** The metrics2 name and description. */
  public MetricsInfo info() {
    return Interns.info(metricName, description());
  }

  /** The counter of reads that fell back for {@code reason}: {@code Fallback<Reason>}. */
  public static MetricsInfo fallback(FallbackReason reason) {
    return Interns.info(
        "Fallback" + camel(reason.name()),
        "Reads sent the stock way because " + reason + " (reads)");
  }

  /** The per-path counter of failures of {@code failureClass}: {@code Failures<Class>}. */
  public static MetricsInfo failures(FailureClass failureClass) {
    return Interns.info(
        "Failures" + camel(failureClass.name()),
        "Failures of class " + failureClass + " on this path (failures)");
  }

  /** Every metric name of record {@code RECORD} (or {@code PATH_RECORD}), dynamic ones included. */
  public static List<String> names(boolean perPath) {
    List<String> out = new ArrayList<>();
    for (ClientMetric m : values()) {
      if (m.perPath == perPath) {
        out.add(m.metricName);
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

  static String camel(String constant) {
    StringBuilder sb = new StringBuilder();
    for (String part : constant.toLowerCase(Locale.ROOT).split("_")) {
      if (!part.isEmpty()) {
        sb.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
      }
    }
    return sb.toString();
  }
}
