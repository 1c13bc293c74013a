package io.scr.core.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsTag;
import org.apache.hadoop.metrics2.lib.Interns;

/** Test collector: keeps every record's tags and values by name, as a metrics2 sink would see. */
final class RecordingCollector implements MetricsCollector {
  final List<Rec> records = new ArrayList<>();

  @Override
  public MetricsRecordBuilder addRecord(String name) {
    return addRecord(Interns.info(name, name));
  }

  @Override
  public MetricsRecordBuilder addRecord(MetricsInfo info) {
    Rec r = new Rec(info.name(), this);
    records.add(r);
    return r;
  }

  List<Rec> named(String name) {
    List<Rec> out = new ArrayList<>();
    for (Rec r : records) {
      if (r.name.equals(name)) {
        out.add(r);
      }
    }
    return out;
  }

  static final class Rec extends MetricsRecordBuilder {
    final String name;
    final Map<String, String> tags = new LinkedHashMap<>();
    final Map<String, Number> counters = new LinkedHashMap<>();
    final Map<String, Number> gauges = new LinkedHashMap<>();
    private final MetricsCollector parent;

    Rec(String name, MetricsCollector parent) {
      this.name = name;
      this.parent = parent;
    }

    long counter(String n) {
      Number v = counters.get(n);
      if (v == null) {
        throw new AssertionError("no counter " + n + " in " + name + ": " + counters.keySet());
      }
      return v.longValue();
    }

    double gauge(String n) {
      Number v = gauges.get(n);
      if (v == null) {
        throw new AssertionError("no gauge " + n + " in " + name + ": " + gauges.keySet());
      }
      return v.doubleValue();
    }

    @Override
    public MetricsRecordBuilder tag(MetricsInfo info, String value) {
      tags.put(info.name(), value);
      return this;
    }

    @Override
    public MetricsRecordBuilder add(MetricsTag tag) {
      tags.put(tag.name(), tag.value());
      return this;
    }

    @Override
    public MetricsRecordBuilder add(AbstractMetric metric) {
      gauges.put(metric.name(), metric.value());
      return this;
    }

    @Override
    public MetricsRecordBuilder setContext(String value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, int value) {
      return put(counters, info, value);
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, long value) {
      return put(counters, info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, int value) {
      return put(gauges, info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, long value) {
      return put(gauges, info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, float value) {
      return put(gauges, info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, double value) {
      return put(gauges, info, value);
    }

    private MetricsRecordBuilder put(Map<String, Number> m, MetricsInfo info, Number v) {
      if (m.put(info.name(), v) != null) {
        throw new AssertionError("metric " + info.name() + " added twice to " + name);
      }
      return this;
    }

    @Override
    public MetricsCollector parent() {
      return parent;
    }
  }
}
