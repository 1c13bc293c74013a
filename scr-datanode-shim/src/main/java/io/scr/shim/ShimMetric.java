package io.scr.shim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
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
  FDS_PASSED("FdsPassed", Kind.COUNTER, "fds", "File descriptors passed to clients (sendmsg)"),
  LIVE_SEGMENTS("LiveSegments", Kind.GAUGE, "segments", "Shared-memory segments held by clients"),
  LIVE_SLOTS("LiveSlots", Kind.GAUGE, "slots", "Slots registered by clients"),
  LIVE_CONNECTIONS("LiveConnections", Kind.GAUGE, "connections", "Open client connections"),
  LIVE_CLIENTS(
      "LiveClients",
      Kind.GAUGE,
      "processes",
      "Client processes (peer pids) holding a connection, segment or slot"),
  SLOTS_INVALIDATED(
      "SlotsInvalidated",
      Kind.COUNTER,
      "slots",
      "Slots whose VALID bit the invalidation scan cleared (replica deleted, moved, re-stamped)"),
  INVALIDATION_SCANS("InvalidationScans", Kind.COUNTER, "scans", "Invalidation scans run"),
  INVALIDATION_SCAN_FAILURES(
      "InvalidationScanFailures",
      Kind.COUNTER,
      "scans",
      "Invalidation scans that failed (a Throwable); the next one runs at the interval regardless"),
  NON_FINALIZED_REPLICAS_SERVED(
      "NonFinalizedReplicasServed",
      Kind.COUNTER,
      "replicas",
      "Fd requests served for RBW/RUR replicas"),
  FD_REQUESTS_MOVED_TO_WORKERS(
      "FdRequestsMovedToWorkers",
      Kind.COUNTER,
      "events",
      "Times a slow fd request on an event loop, whose thread read from storage (or waited over 10"
          + " times the bound), sent fd requests to the worker threads for"
          + " "
          + ScrShimKeys.FD_REQUESTS_LOOP_BACKOFF_MS),
  FD_REQUESTS_SLOW_KEPT_ON_LOOP(
      "FdRequestsSlowKeptOnLoop",
      Kind.COUNTER,
      "requests",
      "Fd requests slower than "
          + ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS
          + " on an event loop that did not move"
          + " serving: the thread waited for a lock (up to 10 times the bound), a GC or a core, or"
          + " computed"),
  SOCKET_PATH_CHECK_SKIPPED(
      "SocketPathCheckSkipped",
      Kind.GAUGE,
      "flag",
      "1 when the socket path security check skipped components (a test build of the plugin"
          + " that trusts a temporary directory): alert on it"),
  REJECTIONS_TOTAL(
      "RejectionsTotal", Kind.COUNTER, "events", "Connections or requests refused, all reasons");

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

  /** Whether a metric only grows (counter) or is a current value (gauge). */
  public enum Kind {
    /** Monotonic since the shim started. */
    COUNTER,
    /** A current value. */
    GAUGE
  }

  private final String metricName;
  private final Kind kind;
  private final String unit;
  private final String desc;

  ShimMetric(String name, Kind kind, String unit, String desc) {
    this.metricName = name;
    this.kind = kind;
    this.unit = unit;
    this.desc = desc;
  }

  /** The metric's name as sinks and JMX show it. */
  public String metricName() {
    return metricName;
  }

  /** Counter or gauge. */
  public Kind kind() {
    return kind;
  }

  /** The unit ("fds", "slots", ...). */
  public String unit() {
    return unit;
  }

  /** What the metric counts, with its unit. */
  public String description() {
    return desc + " (" + unit + ")";
  }

  MetricsInfo info() {
    return Interns.info(metricName, description());
  }

  /** The counter of {@code op} requests answered with {@code status}: {@code <Op><Status>}. */
  static MetricsInfo requests(ShimMetrics.OpKind op, Status status) {
    return Interns.info(
        camel(op.label) + camel(status.name()),
        "Requests " + op.label + " answered " + status + " (requests)");
  }

  /** A latency gauge of {@code op}: {@code <Op>Latency<P50|P99|Max>Micros}. */
  static MetricsInfo latency(ShimMetrics.OpKind op, String which) {
    return Interns.info(
        camel(op.label) + "Latency" + which + "Micros",
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
        "RequestFdsPhase" + camel(phase.name()) + which + "Micros",
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
        "Rejections" + camel(reason.name()),
        "Connections or requests refused because " + reason + " (events)");
  }

  /** Every metric name of record {@value #RECORD}, the per-op and per-reason ones included. */
  public static List<String> names() {
    List<String> out = new ArrayList<>();
    for (ShimMetric m : values()) {
      out.add(m.metricName);
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
