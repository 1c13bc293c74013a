package io.scr.core.metrics;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.Objects;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsTag;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes one client context in the platform MBean server for {@code scr doctor --pid} (see
 * {@link ScrClientDiagnosticsMBean}). The figures are {@link ScrClientMetrics}'s own, rendered as
 * text when read, so the doctor sees what the metrics system would.
 *
 * <p>Thread-safety: thread-safe. {@link #register} and {@link #unregister} are idempotent and
 * synchronized; reads take no lock of their own.
 */
public final class ScrClientDiagnostics implements ScrClientDiagnosticsMBean {
  private static final Logger LOG = LoggerFactory.getLogger(ScrClientDiagnostics.class);

  /** The object name pattern of every context's view. */
  public static final String QUERY = "io.scr:type=ScrClient,*";

  private final String context;
  private final ScrClientMetrics metrics;
  private final String settings;

  @com.google.errorprone.annotations.concurrent.GuardedBy("this")
  private boolean registered;

  /** A view of {@code metrics}; {@code settings} are the engine's client keys. */
  public ScrClientDiagnostics(
      String context, ScrClientMetrics metrics, Map<String, String> settings) {
    this.context = Objects.requireNonNull(context, "context");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    StringBuilder s = new StringBuilder();
    for (Map.Entry<String, String> e : settings.entrySet()) {
      s.append(e.getKey()).append('=').append(e.getValue()).append('\n');
    }
    this.settings = s.toString();
  }

  /** The object name of {@code context}'s view. */
  public static ObjectName objectName(String context) throws JMException {
    return new ObjectName("io.scr:type=ScrClient,context=" + ObjectName.quote(context));
  }

  private ObjectName objectName() throws JMException {
    return objectName(context);
  }

  /** Registers in the platform MBean server; a failure is logged, never thrown (reads go on). */
  public synchronized void register() {
    if (registered) {
      return;
    }
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    try {
      ObjectName on = objectName();
      try {
        server.registerMBean(this, on);
      } catch (InstanceAlreadyExistsException e) {
        // Another class loader's copy of scr (or an engine not closed) holds the name: replace it,
        // the newest engine of a context is the one reads go through.
        server.unregisterMBean(on);
        server.registerMBean(this, on);
      }
      registered = true;
    } catch (JMException | RuntimeException e) {
      LOG.warn("scr diagnostics for context {} not registered in JMX: {}", context, e.toString());
    }
  }

  /** Unregisters. Idempotent. */
  public synchronized void unregister() {
    if (!registered) {
      return;
    }
    registered = false;
    try {
      ManagementFactory.getPlatformMBeanServer().unregisterMBean(objectName());
    } catch (JMException | RuntimeException e) {
      LOG.debug("scr diagnostics for context {} already gone: {}", context, e.toString());
    }
  }

  @Override
  public String getContext() {
    return context;
  }

  @Override
  public String getSettings() {
    return settings;
  }

  @Override
  public String getMetrics() {
    Lines lines = new Lines();
    metrics.getMetrics(lines, true);
    return lines.out.toString();
  }

  @Override
  public String toString() {
    return "ScrClientDiagnostics{" + context + "}";
  }

  /** A collector that writes each record's metrics as lines, path records prefixed. */
  private static final class Lines implements MetricsCollector {
    final StringBuilder out = new StringBuilder();

    @Override
    public MetricsRecordBuilder addRecord(String record) {
      return new Record(this, record);
    }

    @Override
    public MetricsRecordBuilder addRecord(MetricsInfo info) {
      return addRecord(info.name());
    }
  }

  private static final class Record extends MetricsRecordBuilder {
    private final Lines parent;
    private final boolean pathRecord;
    private String prefix = "";

    Record(Lines parent, String record) {
      this.parent = parent;
      this.pathRecord = ClientMetric.PATH_RECORD.equals(record);
    }

    private MetricsRecordBuilder line(MetricsInfo info, Object value) {
      parent.out.append(prefix).append(info.name()).append('=').append(value).append('\n');
      return this;
    }

    @Override
    public MetricsRecordBuilder tag(MetricsInfo info, String value) {
      if (pathRecord && "Path".equals(info.name())) {
        prefix = "path[" + value + "].";
      }
      return this;
    }

    @Override
    public MetricsRecordBuilder add(MetricsTag tag) {
      return tag(tag.info(), tag.value());
    }

    @Override
    public MetricsRecordBuilder add(AbstractMetric metric) {
      parent.out.append(prefix).append(metric.name()).append('=').append(metric.value());
      parent.out.append('\n');
      return this;
    }

    @Override
    public MetricsRecordBuilder setContext(String value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, int value) {
      return line(info, value);
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, long value) {
      return line(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, int value) {
      return line(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, long value) {
      return line(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, float value) {
      return line(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, double value) {
      return line(info, value);
    }

    @Override
    public MetricsCollector parent() {
      return parent;
    }
  }
}
