package io.scr.shim;

import io.scr.config.MetricKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.lib.Interns;

/**
 * The catalogue of metrics the shim publishes through Hadoop metrics2 (source {@code
 * ScrShim-<transfer port>}, record {@value #RECORD}): name, kind, unit and description. Besides the
 * fixed metrics below, each op has request counters by status ({@code <Op><Status>}, e.g. {@code
 * RequestFdsSuccess}) and latency percentiles ({@code <Op>LatencyP50Micros}, ...), and each
 * rejection reason a counter ({@code Rejections<Reason>}). {@code docs/metrics.md} lists every name
 * {@link #names()} returns; a test fails when they disagree. Immutable.
 */
public enum ShimMetric {
  FDS_PASSED(MetricKey.counter("FdsPassed", "fds", "File descriptors passed to clients (sendmsg)")),
  LIVE_SEGMENTS(
      MetricKey.gauge("LiveSegments", "segments", "Shared-memory segments held by clients")),
  LIVE_SLOTS(MetricKey.gauge("LiveSlots", "slots", "Slots registered by clients")),
  LIVE_CONNECTIONS(MetricKey.gauge("LiveConnections", "connections", "Open client connections")),
  LIVE_CLIENTS(
      MetricKey.gauge(
          "LiveClients",
          "processes",
          "Client processes (peer pids) holding a connection, segment or slot")),
  SLOTS_INVALIDATED(
      MetricKey.counter(
          "SlotsInvalidated",
          "slots",
          "Slots whose VALID bit the invalidation scan cleared (replica deleted, moved, re-stamped)")),
  UNCACHES_DEFERRED(
      MetricKey.counter(
          "UncachesDeferred",
          "requests",
          "DataNode requests to uncache a block refused because a shim client held an anchor on it"
              + " (the DataNode asks again later), as stock defers them for its own slots")),
  CACHE_EVENTS_UNAVAILABLE(
      MetricKey.gauge(
          "CacheEventsUnavailable",
          "flag",
          "1 when the DataNode caches blocks but the shim cannot hear its cache events: slots"
              + " become anchorable one invalidation scan late and uncaches are not deferred")),
  INVALIDATION_SCANS(MetricKey.counter("InvalidationScans", "scans", "Invalidation scans run")),
  INVALIDATION_SCAN_FAILURES(
      MetricKey.counter(
          "InvalidationScanFailures",
          "scans",
          "Invalidation scans that failed (a Throwable); the next one runs at the interval regardless")),
  NON_FINALIZED_REPLICAS_SERVED(
      MetricKey.counter(
          "NonFinalizedReplicasServed", "replicas", "Fd requests served for RBW/RUR replicas")),
  FD_REQUESTS_MOVED_TO_WORKERS(
      MetricKey.counter(
          "FdRequestsMovedToWorkers",
          "events",
          "Times a slow fd request on an event loop, whose thread read from storage (or waited over 10"
              + " times the bound), sent fd requests to the worker threads for"
              + " "
              + ScrShimKeys.FD_REQUESTS_LOOP_BACKOFF_MS)),
  FD_REQUESTS_SLOW_KEPT_ON_LOOP(
      MetricKey.counter(
          "FdRequestsSlowKeptOnLoop",
          "requests",
          "Fd requests slower than "
              + ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS
              + " on an event loop that did not move"
              + " serving: the thread waited for a lock (up to 10 times the bound), a GC or a core, or"
              + " computed")),
  SOCKET_PATH_CHECK_SKIPPED(
      MetricKey.gauge(
          "SocketPathCheckSkipped",
          "flag",
          "1 when the socket path security check skipped components (a test build of the plugin"
              + " that trusts a temporary directory): alert on it")),
  REJECTIONS_TOTAL(
      MetricKey.counter(
          "RejectionsTotal", "events", "Connections or requests refused, all reasons"));

  /** The record name. */
  public static final String RECORD = "ScrShim";

  /** The statuses that get a request counter per op: every status the shim answers with. */
  static final List<Status> STATUSES =
      Collections.unmodifiableList(
          Arrays.asList(
              Status.SUCCESS,
              Status.ERROR,
              Status.ERROR_INVALID,
              Status.ERROR_ACCESS_TOKEN,
              Status.ERROR_UNSUPPORTED));

  private final MetricKey key;

  ShimMetric(MetricKey key) {
    this.key = key;
  }

  /** Name, kind, unit and description. */
  public MetricKey key() {
    return key;
  }

  /** The metric's name as sinks and JMX show it. */
  public String metricName() {
    return key.name();
  }

  MetricsInfo info() {
    return Interns.info(key.name(), key.description());
  }

  /** The counter of {@code op} requests answered with {@code status}: {@code <Op><Status>}. */
  static MetricsInfo requests(ShimMetrics.OpKind op, Status status) {
    return Interns.info(
        MetricKey.camel(op.label) + MetricKey.camel(status.name()),
        "Requests " + op.label + " answered " + status + " (requests)");
  }

  /** A latency gauge of {@code op}: {@code <Op>Latency<P50|P99|Max>Micros}. */
  static MetricsInfo latency(ShimMetrics.OpKind op, String which) {
    return Interns.info(
        MetricKey.camel(op.label) + "Latency" + which + "Micros",
        which
            + " time of "
            + op.label
            + " from request decoded to reply sent (fds passed) since start (microseconds)");
  }

  /**
   * A gauge of one phase of granted op-87 requests ({@link ShimMetrics.FdPhase}): {@code
   * RequestFdsPhase<Phase><P50|P99>Micros}.
   */
  static MetricsInfo fdPhase(ShimMetrics.FdPhase phase, String which) {
    return Interns.info(
        "RequestFdsPhase" + MetricKey.camel(phase.name()) + which + "Micros",
        which
            + " time of granted op 87 requests in phase '"
            + phase.label
            + "' (docs/shim.md), since start (microseconds)");
  }

  /** The statistics published per op-87 phase. */
  static final List<String> PHASE_STATS = Collections.unmodifiableList(Arrays.asList("P50", "P99"));

  /** The latency statistics published per op. */
  static final List<String> LATENCY_STATS =
      Collections.unmodifiableList(Arrays.asList("P50", "P99", "Max"));

  /** The counter of refusals for {@code reason}: {@code Rejections<Reason>}. */
  static MetricsInfo rejections(ShimMetrics.Rejection reason) {
    return Interns.info(
        "Rejections" + MetricKey.camel(reason.name()),
        "Connections or requests refused because " + reason + " (events)");
  }

  /** Every metric name of record {@value #RECORD}, the per-op and per-reason ones included. */
  public static List<String> names() {
    List<String> out = new ArrayList<>();
    for (ShimMetric m : values()) {
      out.add(m.key.name());
    }
    for (ShimMetrics.OpKind op : ShimMetrics.OpKind.values()) {
      for (Status s : STATUSES) {
        out.add(requests(op, s).name());
      }
      for (String which : LATENCY_STATS) {
        out.add(latency(op, which).name());
      }
    }
    for (ShimMetrics.FdPhase phase : ShimMetrics.FdPhase.values()) {
      for (String which : PHASE_STATS) {
        out.add(fdPhase(phase, which).name());
      }
    }
    for (ShimMetrics.Rejection r : ShimMetrics.Rejection.values()) {
      out.add(rejections(r).name());
    }
    return out;
  }
}
