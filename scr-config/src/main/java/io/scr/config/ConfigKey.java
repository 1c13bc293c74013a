package io.scr.config;

import java.util.Objects;
import java.util.function.Function;

/**
 * One configuration key of a catalogue ({@code io.scr.core.ScrKeys} for the client, {@code
 * io.scr.shim.ScrShimKeys} for the DataNode shim): its name, type, default, description and the
 * release that introduced it. Code reads configuration only through these entries, so the
 * documented name is the one the code reads, and {@code docs/configuration.md} is generated from
 * the catalogues.
 *
 * <p>Hadoop-free: a value is read from any lookup by name, e.g. {@code key.get(conf::get)} for a
 * Hadoop {@code Configuration}. Values are trimmed; an empty value of a non-string key counts as
 * unset.
 *
 * <p>Immutable and thread-safe.
 *
 * @param <T> the value type: {@link Boolean}, {@link Integer}, {@link Long}, {@link Double} or
 *     {@link String}
 */
public final class ConfigKey<T> {
  private final String name;
  private final Class<T> type;
  private final T defaultValue;
  private final String description;
  private final String since;
  private final boolean stock;

  private ConfigKey(Builder<T> b) {
    this.name = b.name;
    this.type = b.type;
    this.defaultValue = b.defaultValue;
    this.description = Objects.requireNonNull(b.description, "description");
    this.since = b.since;
    this.stock = b.stock;
  }

  /**
   * Starts a key named {@code name} (as written in {@code hdfs-site.xml}) of type {@code type}.
   *
   * @throws IllegalArgumentException {@code type} is not one of the supported value types
   */
  public static <T> Builder<T> newBuilder(String name, Class<T> type) {
    return new Builder<>(name, type);
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

  /**
   * Whether {@code lookup} (a key name to its raw value, null when unset) sets this key, to
   * anything, an empty string included.
   */
  public boolean isSet(Function<String, String> lookup) {
    return lookup.apply(name) != null;
  }

  /**
   * The value {@code lookup} (a key name to its raw value, null when unset) gives this key, or the
   * default when unset.
   *
   * @throws IllegalArgumentException naming the key and the bad value when it does not parse
   */
  public T get(Function<String, String> lookup) {
    String raw = lookup.apply(name);
    if (raw == null) {
      return defaultValue;
    }
    raw = raw.trim();
    if (raw.isEmpty() && type != String.class) {
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

  /** The key's name, as messages quote it. */
  @Override
  public String toString() {
    return name;
  }

  /** Builds one {@link ConfigKey}. Not thread-safe. */
  public static final class Builder<T> {
    private final String name;
    private final Class<T> type;
    private T defaultValue;
    private String description;
    private String since = "0.1";
    private boolean stock;

    private Builder(String name, Class<T> type) {
      this.name = Objects.requireNonNull(name, "name");
      this.type = Objects.requireNonNull(type, "type");
      if (type != Boolean.class
          && type != Integer.class
          && type != Long.class
          && type != Double.class
          && type != String.class) {
        throw new IllegalArgumentException(
            name + ": a key's type is Boolean, Integer, Long, Double or String, not " + type);
      }
    }

    /** The value when the key is unset (default: none, {@code null}). */
    public Builder<T> defaultValue(T value) {
      this.defaultValue = value;
      return this;
    }

    /** What the key controls (required). */
    public Builder<T> description(String text) {
      this.description = text;
      return this;
    }

    /** The scr release that introduced the key (default "0.1"). */
    public Builder<T> since(String release) {
      this.since = Objects.requireNonNull(release, "since");
      return this;
    }

    /** Marks a stock Hadoop key that scr honours (default: an {@code scr.*} key). */
    public Builder<T> stock() {
      this.stock = true;
      return this;
    }

    /** The key. */
    public ConfigKey<T> build() {
      return new ConfigKey<>(this);
    }
  }
}
