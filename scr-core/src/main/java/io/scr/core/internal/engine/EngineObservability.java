package io.scr.core.internal.engine;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.core.metrics.ScrClientDiagnostics;
import io.scr.core.metrics.ScrClientMetrics;
import io.scr.core.metrics.SummaryReporter;
import java.util.Map;

/**
 * What watches an engine: its metrics2 source (when {@code scr.client.metrics.enabled}), the JMX
 * diagnostics view {@code scr doctor --pid} reads, and the periodic summary line. Started by the
 * engine's first acquire, stopped by its last close.
 *
 * <p>Thread-safety: thread-safe; the summary reporter is guarded by this object's monitor, and
 * registration is the metrics system's and the platform MBean server's.
 */
final class EngineObservability {
  private final String context;
  private final ScrClientMetrics metrics;
  private final ScrClientDiagnostics diagnostics;
  private final boolean metricsEnabled;
  private final int summaryIntervalSeconds;

  @GuardedBy("this")
  private SummaryReporter summary;

  EngineObservability(
      String context,
      ScrClientMetrics metrics,
      Map<String, String> settings,
      boolean metricsEnabled,
      int summaryIntervalSeconds) {
    this.context = context;
    this.metrics = metrics;
    this.diagnostics = new ScrClientDiagnostics(context, metrics, settings);
    this.metricsEnabled = metricsEnabled;
    this.summaryIntervalSeconds = summaryIntervalSeconds;
  }

  /** Registers the views and starts the summary line; called once. */
  synchronized void start() {
    if (metricsEnabled) {
      metrics.register();
    }
    diagnostics.register();
    summary = SummaryReporter.start(context, metrics::snapshot, summaryIntervalSeconds);
  }

  /** Stops what {@link #start()} started; idempotent. */
  void stop() {
    SummaryReporter reporter;
    synchronized (this) {
      reporter = summary;
      summary = null;
    }
    if (reporter != null) {
      reporter.close();
    }
    metrics.unregister();
    diagnostics.unregister();
  }

  /** Every figure the metrics publish, now. */
  ClientSnapshot snapshot() {
    return metrics.snapshot();
  }
}
