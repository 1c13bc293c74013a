package io.scr.core.metrics;

import io.scr.cache.LeaseCacheStats;
import io.scr.cache.RemovalCause;
import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.FailureClass;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import io.scr.core.stats.PathCounters;
import io.scr.shm.SlotPoolStats;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Hadoop metrics2 source of one client context: record {@value ClientMetric#RECORD} with the
 * context totals and one record {@value ClientMetric#PATH_RECORD} per DataNode socket path (every
 * name, kind and unit is in {@link ClientMetric}). Registered with {@link DefaultMetricsSystem}
 * under {@code ScrClient-<context>} by the engine's first acquire and unregistered by its last
 * close, so JMX shows it as {@code Hadoop:service=<metrics prefix>,name=ScrClient-<context>} in any
 * process whose metrics system is started (RegionServer, NodeManager container, DataNode), and
 * every configured sink receives it.
 *
 * <p>Reading the metrics never touches the read path: it sums LongAdders and takes the cache's,
 * slot pools' and backoff's snapshots.
 *
 * <p>Thread-safety: thread-safe; {@link #register} and {@link #unregister} are idempotent and
 * synchronized on this object; {@link #getMetrics} and {@link #snapshot} take no lock of their own
 * apart from the latency histogram's.
 */
public final class ScrClientMetrics implements MetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(ScrClientMetrics.class);
  private static final MetricsInfo CONTEXT_TAG = Interns.info("Context", "scr client context");
  private static final MetricsInfo PATH_TAG = Interns.info("Path", "DataNode socket path");

  private final EngineState client;
  private final ClientCounters counters;
  private final Ticker ticker;
  private final String sourceName;

  @com.google.errorprone.annotations.concurrent.GuardedBy("this")
  private boolean registered;

  /**
   * A source over {@code client}'s state; {@code counters} are the ones its data plane updates. Not
   * registered until {@link #register()}.
   */
  public ScrClientMetrics(EngineState client, ClientCounters counters, Ticker ticker) {
    this.client = Objects.requireNonNull(client, "client");
    this.counters = Objects.requireNonNull(counters, "counters");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.sourceName = sourceName(client.context());
  }

  /** The metrics2 source name of {@code context}: {@code ScrClient-<context>}. */
  public static String sourceName(String context) {
    return "ScrClient-" + context.replaceAll("[^A-Za-z0-9_.-]", "_");
  }

  /** This source's name in the metrics system and in the JMX object name. */
  public String sourceName() {
    return sourceName;
  }

  /**
   * Registers with the default metrics system. A failure (a name clash with another class loader's
   * copy, a broken metrics configuration) is logged and otherwise ignored: metrics never stop
   * reads.
   */
  public synchronized void register() {
    if (registered) {
      return;
    }
    try {
      DefaultMetricsSystem.instance()
          .register(sourceName, "scr short-circuit client, context " + client.context(), this);
      registered = true;
    } catch (MetricsException e) {
      LOG.warn("scr metrics source {} not registered: {}", sourceName, e.toString());
    }
  }

  /** Unregisters (and frees the name for a later engine of the same context). Idempotent. */
  public synchronized void unregister() {
    if (!registered) {
      return;
    }
    registered = false;
    MetricsSystem ms = DefaultMetricsSystem.instance();
    try {
      ms.unregisterSource(sourceName);
    } finally {
      DefaultMetricsSystem.removeSourceName(sourceName);
    }
  }

  /** Every figure now. */
  public ClientSnapshot snapshot() {
    ClientSnapshot.Builder b = new ClientSnapshot.Builder();
    b.context = client.context();
    b.takenAtNanos = ticker.read();
    EnumMap<FallbackReason, Long> fb = new EnumMap<>(FallbackReason.class);
    for (FallbackReason r : FallbackReason.values()) {
      fb.put(r, client.fallbackCount(r));
    }
    b.fallbacks = fb;
    b.cache = client.cacheStats();
    b.slotPools = client.slotPoolStats();
    b.backoff = client.backoffStatus();
    b.health = client.healthStatus();
    List<ClientSnapshot.PathFigures> paths = new ArrayList<>();
    for (PathCounters c : counters.paths()) {
      paths.add(new ClientSnapshot.PathFigures(c));
    }
    b.paths = paths;
    b.releaseRequestsOp88 = counters.stockReleaseRequests();
    b.releaseRequestsBatched = counters.batchedReleaseRequests();
    b.releasesBatched = counters.batchedReleaseSlots();
    b.replicasPrefetched = counters.prefetched();
    b.prefetchSkipped = counters.prefetchSkipped();
    b.prefetchHits = counters.prefetchHits();
    client.reportParts(
        new PartFigures() {
          @Override
          public void sockets(
              long connects, long connectFailures, long reuses, long staleRetries, int idle) {
            b.socketConnects = connects;
            b.socketConnectFailures = connectFailures;
            b.socketReuses = reuses;
            b.socketStaleRetries = staleRetries;
            b.socketIdle = idle;
          }

          @Override
          public void mappedReads(long reads, long fallbacks, int mappings) {
            b.mappedReads = reads;
            b.mappedReadFallbacks = fallbacks;
            b.mappedReadMappings = mappings;
          }

          @Override
          public void extensions(long probes, int peers, long failures) {
            b.extensionProbes = probes;
            b.extensionPeers = peers;
            b.extensionFailures = failures;
          }

          @Override
          public void tailReads(long stateRequests, long fallbacks) {
            b.tailStateRequests = stateRequests;
            b.tailFallbacks = fallbacks;
          }

          @Override
          public void absentReplicas(long remembered, long avoided) {
            b.absentReplicasRemembered = remembered;
            b.absentReplicaRequestsAvoided = avoided;
          }
        });
    b.replicasOrphaned = counters.replicasOrphaned();
    b.replicasRevalidated = counters.replicasRevalidated();
    b.orphansDropped = counters.orphansDropped();
    b.orphanedReads = counters.orphanedReads();
    b.orphanedBytes = counters.orphanedBytes();
    b.orphanedReplicas = client.orphanedReplicas();
    b.replicaOpen = counters.replicaOpenLatency();
    for (ClientCounters.OpenPhase phase : ClientCounters.OpenPhase.values()) {
      b.openPhases.put(phase, counters.openPhaseLatency(phase));
    }
    b.processOpenFds = ProcessFds.openCount();
    b.processFdLimit = ProcessFds.softLimit();
    return b.build();
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    ClientSnapshot s = snapshot();
    MetricsRecordBuilder rb =
        collector.addRecord(ClientMetric.RECORD).setContext("scr").tag(CONTEXT_TAG, s.context);
    counter(rb, ClientMetric.SHORT_CIRCUIT_READS, s.reads);
    counter(rb, ClientMetric.SHORT_CIRCUIT_BYTES, s.bytes);
    counter(rb, ClientMetric.FALLBACK_TOTAL, s.fallbackTotal());
    for (Map.Entry<FallbackReason, Long> e : s.fallbacks.entrySet()) {
      rb.addCounter(ClientMetric.fallback(e.getKey()), e.getValue());
    }
    counter(rb, ClientMetric.CHECKSUM_FAILURES, s.checksumFailures);

    LeaseCacheStats c = s.cache;
    counter(rb, ClientMetric.CACHE_HITS, c.hitCount());
    counter(rb, ClientMetric.CACHE_MISSES, c.missCount());
    rb.addGauge(ClientMetric.CACHE_HIT_PERCENT.info(), c.hitRate() * 100.0);
    counter(rb, ClientMetric.CACHE_LOADS, c.loadSuccessCount());
    counter(rb, ClientMetric.CACHE_LOAD_FAILURES, c.loadFailureCount());
    counter(rb, ClientMetric.CACHE_EVICTIONS_SIZE, c.removalCount(RemovalCause.SIZE));
    counter(rb, ClientMetric.CACHE_EVICTIONS_FD_BUDGET, c.removalCount(RemovalCause.FD_BUDGET));
    counter(rb, ClientMetric.CACHE_EXPIRIES, c.removalCount(RemovalCause.EXPIRED));
    counter(rb, ClientMetric.CACHE_INVALIDATIONS, c.removalCount(RemovalCause.INVALIDATED));
    counter(rb, ClientMetric.CACHE_STALE, c.removalCount(RemovalCause.STALE));
    gauge(rb, ClientMetric.CACHE_ENTRIES, c.entryCount());
    gauge(rb, ClientMetric.CACHE_LEASED_ENTRIES, c.leasedEntryCount());
    gauge(rb, ClientMetric.CACHE_CAPACITY, c.capacity());
    gauge(rb, ClientMetric.CACHE_OPEN_FDS, c.openFds());
    gauge(rb, ClientMetric.CACHE_FD_BUDGET, c.fdBudget());
    counter(rb, ClientMetric.CACHE_THRASH_WARNINGS, c.thrashWarningCount());
    gauge(rb, ClientMetric.CACHE_RECOMMENDED_CAPACITY, c.recommendedCapacity());
    gauge(rb, ClientMetric.PROCESS_OPEN_FDS, s.processOpenFds);
    gauge(rb, ClientMetric.PROCESS_FD_LIMIT, s.processFdLimit);

    SlotTotals t = new SlotTotals(s.slotPools);
    gauge(rb, ClientMetric.SLOTS_IN_USE, t.inUse);
    gauge(rb, ClientMetric.SLOTS_FREE, t.free);
    gauge(rb, ClientMetric.SLOTS_PENDING_RELEASE, t.pending);
    gauge(rb, ClientMetric.SLOT_SEGMENTS, t.segments);
    counter(rb, ClientMetric.SLOT_ALLOCATIONS, t.allocations);
    counter(rb, ClientMetric.SLOT_ALLOCATIONS_WAITED, t.waited);
    counter(rb, ClientMetric.SLOT_ALLOCATION_TIMEOUTS, t.timeouts);
    gauge(rb, ClientMetric.SLOT_ALLOCATION_WAIT_P50, micros(t.waitP50Nanos));
    gauge(rb, ClientMetric.SLOT_ALLOCATION_WAIT_P99, micros(t.waitP99Nanos));
    counter(rb, ClientMetric.SLOT_SEGMENT_FETCHES, t.fetches);
    counter(rb, ClientMetric.SLOT_SEGMENT_FETCH_FAILURES, t.fetchFailures);
    counter(rb, ClientMetric.SLOT_SEGMENTS_DISCONNECTED, t.disconnected);
    counter(rb, ClientMetric.SLOT_RELEASES, t.releases);
    counter(rb, ClientMetric.SLOT_RELEASE_FAILURES, t.releaseFailures);
    counter(rb, ClientMetric.SLOT_RELEASE_REQUESTS_OP88, s.releaseRequestsOp88);
    counter(rb, ClientMetric.SLOT_RELEASE_REQUESTS_BATCHED, s.releaseRequestsBatched);
    counter(rb, ClientMetric.SLOT_RELEASES_BATCHED, s.releasesBatched);
    counter(rb, ClientMetric.REPLICAS_PREFETCHED, s.replicasPrefetched);
    counter(rb, ClientMetric.PREFETCH_SKIPPED, s.prefetchSkipped);
    counter(rb, ClientMetric.MAPPED_READS, s.mappedReads);
    counter(rb, ClientMetric.MAPPED_READ_FALLBACKS, s.mappedReadFallbacks);
    gauge(rb, ClientMetric.DATANODES_NOT_HEALTHY, s.dataNodesNotHealthy());
    gauge(rb, ClientMetric.MAPPED_READ_MAPPINGS, s.mappedReadMappings);
    counter(rb, ClientMetric.PREFETCH_HITS, s.prefetchHits);
    counter(rb, ClientMetric.EXTENSION_PROBES, s.extensionProbes);
    gauge(rb, ClientMetric.EXTENSION_PEERS, s.extensionPeers);
    counter(rb, ClientMetric.EXTENSION_FAILURES, s.extensionFailures);
    counter(rb, ClientMetric.TAIL_STATE_REQUESTS, s.tailStateRequests);
    counter(rb, ClientMetric.TAIL_FALLBACKS, s.tailFallbacks);
    counter(rb, ClientMetric.ABSENT_REPLICAS_REMEMBERED, s.absentReplicasRemembered);
    counter(rb, ClientMetric.ABSENT_REPLICA_REQUESTS_AVOIDED, s.absentReplicaRequestsAvoided);
    counter(rb, ClientMetric.REPLICAS_ORPHANED, s.replicasOrphaned);
    counter(rb, ClientMetric.REPLICAS_REVALIDATED, s.replicasRevalidated);
    counter(rb, ClientMetric.ORPHANS_DROPPED, s.orphansDropped);
    counter(rb, ClientMetric.ORPHANED_READS, s.orphanedReads);
    counter(rb, ClientMetric.ORPHANED_BYTES, s.orphanedBytes);
    gauge(rb, ClientMetric.ORPHANED_REPLICAS, s.orphanedReplicas);

    counter(rb, ClientMetric.SOCKET_CONNECTS, s.socketConnects);
    counter(rb, ClientMetric.SOCKET_CONNECT_FAILURES, s.socketConnectFailures);
    counter(rb, ClientMetric.SOCKET_REUSES, s.socketReuses);
    counter(rb, ClientMetric.SOCKET_STALE_RETRIES, s.socketStaleRetries);
    gauge(rb, ClientMetric.SOCKET_IDLE_CONNECTIONS, s.socketIdle);
    gauge(rb, ClientMetric.PATHS_BACKING_OFF, s.pathsBackingOff());

    long opens = 0;
    for (ClientSnapshot.PathFigures p : s.paths) {
      opens += p.opens;
    }
    counter(rb, ClientMetric.REPLICA_OPENS, opens);
    gauge(rb, ClientMetric.REPLICA_OPEN_P50, micros(s.replicaOpen.p50Nanos()));
    gauge(rb, ClientMetric.REPLICA_OPEN_P99, micros(s.replicaOpen.p99Nanos()));
    gauge(rb, ClientMetric.REPLICA_OPEN_MAX, micros(s.replicaOpen.maxNanos()));
    gauge(
        rb,
        ClientMetric.REPLICA_OPEN_SLOT_P99,
        micros(s.replicaOpenPhase(ClientCounters.OpenPhase.SLOT).p99Nanos()));
    gauge(
        rb,
        ClientMetric.REPLICA_OPEN_EXCHANGE_P99,
        micros(s.replicaOpenPhase(ClientCounters.OpenPhase.EXCHANGE).p99Nanos()));
    gauge(
        rb,
        ClientMetric.REPLICA_OPEN_FILES_P99,
        micros(s.replicaOpenPhase(ClientCounters.OpenPhase.FILES).p99Nanos()));

    for (String path : pathsOf(s)) {
      pathRecord(collector, s, path);
    }
  }

  private static List<String> pathsOf(ClientSnapshot s) {
    List<String> out = new ArrayList<>();
    for (ClientSnapshot.PathFigures p : s.paths) {
      out.add(p.path);
    }
    for (BackoffStatus st : s.backoff) {
      if (!out.contains(st.path())) {
        out.add(st.path());
      }
    }
    for (HealthStatus st : s.health) {
      if (!out.contains(st.path())) {
        out.add(st.path());
      }
    }
    return out;
  }

  private static void pathRecord(MetricsCollector collector, ClientSnapshot s, String path) {
    MetricsRecordBuilder rb =
        collector
            .addRecord(ClientMetric.PATH_RECORD)
            .setContext("scr")
            .tag(CONTEXT_TAG, s.context)
            .tag(PATH_TAG, path);
    ClientSnapshot.PathFigures f = null;
    for (ClientSnapshot.PathFigures p : s.paths) {
      if (p.path.equals(path)) {
        f = p;
      }
    }
    counter(rb, ClientMetric.PATH_READS, f == null ? 0 : f.reads);
    counter(rb, ClientMetric.PATH_BYTES, f == null ? 0 : f.bytes);
    counter(rb, ClientMetric.PATH_OPENS, f == null ? 0 : f.opens);
    counter(rb, ClientMetric.PATH_CHECKSUM_FAILURES, f == null ? 0 : f.checksumFailures);
    EnumMap<FailureClass, Long> failures = new EnumMap<>(FailureClass.class);
    long remaining = 0;
    boolean backingOff = false;
    for (BackoffStatus st : s.backoff) {
      if (st.path().equals(path)) {
        failures.put(st.failureClass(), st.failures());
        if (st.failureClass().disablesPath() && st.remainingBackoffNanos() > 0) {
          backingOff = true;
        }
        remaining = Math.max(remaining, st.remainingBackoffNanos());
      }
    }
    gauge(rb, ClientMetric.PATH_BACKING_OFF, backingOff ? 1 : 0);
    gauge(rb, ClientMetric.PATH_BACKOFF_REMAINING, TimeUnit.NANOSECONDS.toMillis(remaining));
    for (FailureClass fc : FailureClass.values()) {
      Long n = failures.get(fc);
      rb.addCounter(ClientMetric.failures(fc), n == null ? 0 : n);
    }
    HealthStatus h = null;
    for (HealthStatus st : s.health) {
      if (st.path().equals(path)) {
        h = st;
      }
    }
    gauge(rb, ClientMetric.PATH_HEALTH_STATE, h == null ? 0 : h.state().code());
    gauge(
        rb,
        ClientMetric.PATH_HEALTH_DEADLINE,
        h == null ? 0 : TimeUnit.NANOSECONDS.toMillis(h.deadlineNanos()));
    counter(rb, ClientMetric.PATH_HEALTH_TRANSITIONS, h == null ? 0 : h.transitions());
    counter(
        rb,
        ClientMetric.PATH_HEALTH_UNRESPONSIVE,
        h == null ? 0 : h.transitionsTo(HealthState.UNRESPONSIVE));
    counter(rb, ClientMetric.PATH_HEALTH_DEAD, h == null ? 0 : h.transitionsTo(HealthState.DEAD));
    counter(rb, ClientMetric.PATH_HEALTH_PROBES, h == null ? 0 : h.probes());
    SlotPoolStats pool = null;
    for (SlotPoolStats p : s.slotPools) {
      if (p.poolName().endsWith("@" + path)) {
        pool = p;
      }
    }
    gauge(rb, ClientMetric.PATH_SLOTS_IN_USE, pool == null ? 0 : pool.slotsInUse());
    gauge(rb, ClientMetric.PATH_SLOTS_FREE, pool == null ? 0 : pool.slotsFree());
    gauge(rb, ClientMetric.PATH_SLOT_SEGMENTS, pool == null ? 0 : pool.segments());
  }

  private static void counter(MetricsRecordBuilder rb, ClientMetric m, long v) {
    rb.addCounter(m.info(), v);
  }

  private static void gauge(MetricsRecordBuilder rb, ClientMetric m, long v) {
    rb.addGauge(m.info(), v);
  }

  private static long micros(long nanos) {
    return TimeUnit.NANOSECONDS.toMicros(nanos);
  }

  /** Slot-pool figures summed over DataNodes; percentiles of the worst pool. */
  static final class SlotTotals {
    long inUse;
    long free;
    long pending;
    long segments;
    long allocations;
    long waited;
    long timeouts;
    long fetches;
    long fetchFailures;
    long disconnected;
    long releases;
    long releaseFailures;
    long waitP50Nanos;
    long waitP99Nanos;

    SlotTotals(List<SlotPoolStats> pools) {
      for (SlotPoolStats p : pools) {
        inUse += p.slotsInUse();
        free += p.slotsFree();
        pending += p.slotsPendingRelease();
        segments += p.segments();
        allocations += p.allocations();
        waited += p.allocationsThatWaited();
        timeouts += p.allocationTimeouts();
        fetches += p.segmentFetches();
        fetchFailures += p.segmentFetchFailures();
        disconnected += p.segmentsDisconnected();
        releases += p.releases();
        releaseFailures += p.releaseFailures();
        waitP50Nanos = Math.max(waitP50Nanos, p.allocationWaitP50Nanos());
        waitP99Nanos = Math.max(waitP99Nanos, p.allocationWaitP99Nanos());
      }
    }
  }
}
