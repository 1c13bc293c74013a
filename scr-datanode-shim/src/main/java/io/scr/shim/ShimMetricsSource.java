package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shim's Hadoop metrics2 source over {@link ShimMetrics}: one record {@value ShimMetric#RECORD}
 * (tags {@code Port}, {@code SocketPath}) with every metric of {@link ShimMetric}. Registered as
 * {@code ScrShim-<transfer port>} when the shim starts serving, so several DataNodes in one JVM
 * (MiniDFSCluster) do not collide, and JMX shows it as {@code
 * Hadoop:service=DataNode,name=ScrShim-<port>}; unregistered when the plugin stops.
 *
 * <p>Thread-safety: {@link #register} and {@link #unregister} are idempotent and synchronized on
 * this object; {@link #getMetrics} (the metrics system's thread, JMX readers) only reads
 * thread-safe counters.
 */
final class ShimMetricsSource implements MetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(ShimMetricsSource.class);
  private static final MetricsInfo PORT_TAG = Interns.info("Port", "DataNode transfer port");
  private static final MetricsInfo PATH_TAG = Interns.info("SocketPath", "scr shim socket path");

  private final ShimMetrics metrics;
  private final IntSupplier clients;
  private final int port;
  private final String socketPath;
  private final String sourceName;

  @GuardedBy("this")
  private boolean registered;

  ShimMetricsSource(ShimMetrics metrics, IntSupplier clients, int port, String socketPath) {
    this.metrics = metrics;
    this.clients = clients;
    this.port = port;
    this.socketPath = socketPath;
    this.sourceName = sourceName(port);
  }

  /** The metrics2 source name of the shim of the DataNode with transfer port {@code port}. */
  static String sourceName(int port) {
    return "ScrShim-" + port;
  }

  String sourceName() {
    return sourceName;
  }

  /** Registers with the default metrics system; a failure is logged, never fatal. */
  synchronized void register() {
    if (registered) {
      return;
    }
    try {
      DefaultMetricsSystem.instance()
          .register(sourceName, "scr DataNode shim serving " + socketPath, this);
      registered = true;
    } catch (MetricsException e) {
      LOG.warn("scr shim metrics source {} not registered: {}", sourceName, e.toString());
    }
  }

  /** Unregisters and frees the name for a restarted DataNode on the same port. Idempotent. */
  synchronized void unregister() {
    if (!registered) {
      return;
    }
    registered = false;
    try {
      DefaultMetricsSystem.instance().unregisterSource(sourceName);
    } finally {
      DefaultMetricsSystem.removeSourceName(sourceName);
    }
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    MetricsRecordBuilder rb =
        collector
            .addRecord(ShimMetric.RECORD)
            .setContext("scr")
            .tag(PORT_TAG, Integer.toString(port))
            .tag(PATH_TAG, socketPath);
    rb.addCounter(ShimMetric.FDS_PASSED.info(), metrics.fdsPassed.sum());
    rb.addGauge(ShimMetric.LIVE_SEGMENTS.info(), metrics.liveSegments.sum());
    rb.addGauge(ShimMetric.LIVE_SLOTS.info(), metrics.liveSlots.sum());
    rb.addGauge(ShimMetric.LIVE_CONNECTIONS.info(), metrics.liveConnections.sum());
    rb.addGauge(ShimMetric.LIVE_CLIENTS.info(), clients.getAsInt());
    rb.addCounter(ShimMetric.SLOTS_INVALIDATED.info(), metrics.slotsInvalidated.sum());
    rb.addCounter(ShimMetric.INVALIDATION_SCANS.info(), metrics.invalidationScans.sum());
    rb.addCounter(ShimMetric.UNCACHES_DEFERRED.info(), metrics.uncachesDeferred.sum());
    rb.addGauge(ShimMetric.CACHE_EVENTS_UNAVAILABLE.info(), metrics.cacheEventsUnavailable ? 1 : 0);
    rb.addCounter(
        ShimMetric.INVALIDATION_SCAN_FAILURES.info(), metrics.invalidationScanFailures.sum());
    rb.addCounter(
        ShimMetric.NON_FINALIZED_REPLICAS_SERVED.info(), metrics.nonFinalizedReplicasServed.sum());
    rb.addCounter(
        ShimMetric.FD_REQUESTS_MOVED_TO_WORKERS.info(), metrics.fdRequestsMovedToWorkers.sum());
    rb.addCounter(
        ShimMetric.FD_REQUESTS_SLOW_KEPT_ON_LOOP.info(), metrics.fdRequestsSlowKeptOnLoop.sum());
    rb.addGauge(
        ShimMetric.SOCKET_PATH_CHECK_SKIPPED.info(), metrics.socketPathCheckSkipped ? 1 : 0);
    for (ShimMetrics.OpKind op : ShimMetrics.OpKind.values()) {
      for (Status s : ShimMetric.STATUSES) {
        rb.addCounter(ShimMetric.requests(op, s), metrics.requests(op, s));
      }
      ShimMetrics.Latency l = metrics.latency(op);
      rb.addGauge(ShimMetric.latency(op, "P50"), micros(l.p50Nanos));
      rb.addGauge(ShimMetric.latency(op, "P99"), micros(l.p99Nanos));
      rb.addGauge(ShimMetric.latency(op, "Max"), micros(l.maxNanos));
    }
    for (ShimMetrics.FdPhase phase : ShimMetrics.FdPhase.values()) {
      ShimMetrics.Latency l = metrics.fdPhase(phase);
      rb.addGauge(ShimMetric.fdPhase(phase, "P50"), micros(l.p50Nanos));
      rb.addGauge(ShimMetric.fdPhase(phase, "P99"), micros(l.p99Nanos));
    }
    long rejected = 0;
    for (ShimMetrics.Rejection r : ShimMetrics.Rejection.values()) {
      long n = metrics.rejections(r);
      rejected += n;
      rb.addCounter(ShimMetric.rejections(r), n);
    }
    rb.addCounter(ShimMetric.REJECTIONS_TOTAL.info(), rejected);
  }

  private static long micros(long nanos) {
    return TimeUnit.NANOSECONDS.toMicros(nanos);
  }
}
