package io.scr.config;

import java.util.Locale;
import java.util.Objects;

/**
 * One metric of a catalogue ({@code io.scr.core.metrics.ClientMetric} for the client, {@code
 * io.scr.shim.ShimMetric} for the DataNode shim): the name sinks and JMX show, whether it is a
 * counter or a gauge, its unit and what it counts. The catalogues hold one entry per fixed metric
 * and build the names of their per-reason and per-op metrics with {@link #camel}; {@code
 * docs/metrics.md} lists every name, and a test per catalogue fails when they disagree.
 *
 * <p>Hadoop-free (metrics2's {@code MetricsInfo} is made from {@link #name()} and {@link
 * #description()} where Hadoop is on the class path). Immutable and thread-safe.
 */
public final class MetricKey {
  /** Whether a metric only grows (counter) or is a current value (gauge). */
  public enum Kind {
    /** Monotonic since its publisher started. */
    COUNTER,
    /** A current value. */
    GAUGE
  }

  private final String name;
  private final Kind kind;
  private final String unit;
  private final String description;

  private MetricKey(String name, Kind kind, String unit, String description) {
    this.name = Objects.requireNonNull(name, "name");
    this.kind = Objects.requireNonNull(kind, "kind");
    this.unit = Objects.requireNonNull(unit, "unit");
    this.description = Objects.requireNonNull(description, "description");
  }

  /** A counter named {@code name} counting {@code unit}s: {@code description} says what. */
  public static MetricKey counter(String name, String unit, String description) {
    return new MetricKey(name, Kind.COUNTER, unit, description);
  }

  /** A gauge named {@code name}, in {@code unit}s: {@code description} says of what. */
  public static MetricKey gauge(String name, String unit, String description) {
    return new MetricKey(name, Kind.GAUGE, unit, description);
  }

  /** The metric's name as sinks and JMX show it. */
  public String name() {
    return name;
  }

  /** Counter or gauge. */
  public Kind kind() {
    return kind;
  }

  /** The unit ("bytes", "fds", "microseconds", ...). */
  public String unit() {
    return unit;
  }

  /** What the metric counts, with its unit. */
  public String description() {
    return description + " (" + unit + ")";
  }

  /**
   * {@code SOME_CONSTANT} as {@code SomeConstant}: how an enum constant (a fallback reason, an op,
   * a status) becomes part of a metric's name.
   */
  public static String camel(String constant) {
    StringBuilder sb = new StringBuilder();
    for (String part : constant.toLowerCase(Locale.ROOT).split("_")) {
      if (!part.isEmpty()) {
        sb.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
      }
    }
    return sb.toString();
  }

  @Override
  public String toString() {
    return name + " (" + kind + ", " + unit + ")";
  }
}
