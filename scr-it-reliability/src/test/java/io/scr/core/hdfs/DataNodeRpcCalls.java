package io.scr.core.hdfs;

import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsTag;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;

/**
 * How many calls of one {@code ClientDatanodeProtocol} method a DataNode's IPC server has served
 * (its per-method RPC metrics, {@code RpcDetailedActivityForPort<ipc port>}, the counter {@code
 * <Method>NumOps}), and how many connections it accepted, snapshotted on each call (not through
 * JMX, whose attribute cache lags by seconds).
 */
final class DataNodeRpcCalls {
  private DataNodeRpcCalls() {}

  /** Calls of {@code method} (e.g. {@code getReplicaVisibleLength}) {@code dn} has served. */
  static long served(DataNode dn, String method) {
    return counter(
        dn,
        "RpcDetailedActivityForPort",
        Character.toUpperCase(method.charAt(0)) + method.substring(1) + "NumOps");
  }

  /**
   * Connections {@code dn}'s IPC server has accepted and authorized (its {@code
   * RpcAuthorizationSuccesses}, counted once per connection).
   */
  static long connections(DataNode dn) {
    return counter(dn, "RpcActivityForPort", "RpcAuthorizationSuccesses");
  }

  private static long counter(DataNode dn, String sourcePrefix, String counter) {
    String sourceName = sourcePrefix + dn.getIpcPort();
    MetricsSource source = DefaultMetricsSystem.instance().getSource(sourceName);
    if (source == null) {
      throw new IllegalStateException("no metrics source " + sourceName + " for " + dn);
    }
    Counting collector = new Counting(counter);
    source.getMetrics(collector, true);
    return collector.count;
  }

  private static final class Counting extends MetricsRecordBuilder implements MetricsCollector {
    private final String counter;
    long count;

    Counting(String counter) {
      this.counter = counter;
    }

    @Override
    public MetricsRecordBuilder addRecord(String name) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addRecord(MetricsInfo info) {
      return this;
    }

    @Override
    public MetricsRecordBuilder tag(MetricsInfo info, String value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder add(MetricsTag tag) {
      return this;
    }

    @Override
    public MetricsRecordBuilder add(AbstractMetric metric) {
      if (metric.name().equals(counter)) {
        count += metric.value().longValue();
      }
      return this;
    }

    @Override
    public MetricsRecordBuilder setContext(String value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, int value) {
      return addCounter(info, (long) value);
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, long value) {
      if (info.name().equals(counter)) {
        count += value;
      }
      return this;
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, int value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, long value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, float value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, double value) {
      return this;
    }

    @Override
    public MetricsCollector parent() {
      return this;
    }
  }
}
