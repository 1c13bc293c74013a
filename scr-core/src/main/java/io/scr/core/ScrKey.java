package io.scr.core;

import java.util.Objects;
import org.apache.hadoop.conf.Configuration;

/**
 * One configuration key of the {@link ScrKeys} catalogue: its name, type, default, description and
 * the release that introduced it. Code reads configuration only through these entries, so the
 * documented name is the one the code reads.
 *
 * <p>Immutable and thread-safe.
 *
 * @param <T> the value type: {@link Boolean}, {@link Integer}, {@link Long}, {@link Double} or
 *     {@link String}
 */
public final class ScrKey<T> {
  private final String name;
  private final Class<T> type;
  private final T defaultValue;
  private final String description;
  private final String since;
  private final boolean stock;

  ScrKey(
      String name, Class<T> type, T defaultValue, String description, String since, boolean stock) {
    this.name = Objects.requireNonNull(name, "name");
    this.type = Objects.requireNonNull(type, "type");
    this.defaultValue = defaultValue;
    this.description = Objects.requireNonNull(description, "description");
    this.since = Objects.requireNonNull(since, "since");
    this.stock = stock;
  }

  /** The key as written in {@code hdfs-site.xml}. */
  public String name() {
    return name;
  }

  /** The value type. */
  public Class<T> type() {
    return type;
  }

  /** The default; {@code null} means "unset" (the description says what happens then). */
  public T defaultValue() {
    return defaultValue;
  }

  /** What the key controls, in one or two sentences. */
  public String description() {
    return description;
  }

  /** The scr release that introduced the key ("0.1" for the first). */
  public String since() {
    return since;
  }

  /** True for a stock Hadoop key that scr honours, false for an {@code scr.*} key. */
  public boolean isStock() {
    return stock;
  }

  /** Whether {@code conf} sets this key (to anything, including an empty string). */
  public boolean isSet(Configuration conf) {
    return conf.get(name) != null;
  }

  /**
   * The value in {@code conf}, or the default when unset.
   *
   * @throws IllegalArgumentException naming the key and the bad value when it does not parse
   */
  public T get(Configuration conf) {
    String raw = conf.getTrimmed(name);
    if (raw == null || (raw.isEmpty() && type != String.class)) {
      return defaultValue;
    }
    try {
      return type.cast(parse(raw));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "configuration key "
              + name
              + " must be a "
              + type.getSimpleName()
              + ", not '"
              + raw
              + "'",
          e);
    }
  }

  private Object parse(String raw) {
    if (type == Boolean.class) {
      if (raw.equalsIgnoreCase("true")) {
        return Boolean.TRUE;
      }
      if (raw.equalsIgnoreCase("false")) {
        return Boolean.FALSE;
      }
      throw new NumberFormatException("not a boolean");
    }
    if (type == Integer.class) {
      return Integer.valueOf(raw);
    }
    if (type == Long.class) {
      return Long.valueOf(raw);
    }
    if (type == Double.class) {
      return Double.valueOf(raw);
    }
    return raw;
  }

  @Override
  public String toString() {
    return name + " (" + type.getSimpleName() + ", default " + defaultValue + ")";
  }
}
