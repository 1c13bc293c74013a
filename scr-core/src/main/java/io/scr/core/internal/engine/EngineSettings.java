package io.scr.core.internal.engine;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.config.ConfigKey;
import io.scr.core.ScrKeys;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;

/**
 * The client keys an engine was built from, to name the differences of a later acquire that shares
 * it: stock gives a {@code ClientContext} to every client of its name and logs "Existing client
 * context ... does not match requested configuration"; scr does the same once per context and set
 * of differing keys, since otherwise the second configuration's socket paths or limits would be
 * ignored without a word.
 *
 * <p>Thread-safety: the settings are immutable; the set of warnings already logged is guarded by
 * this object's monitor.
 */
final class EngineSettings {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Engine.class);

  private final String context;
  private final Map<String, String> settings;

  @GuardedBy("this")
  private final Set<String> warnedDifferences = new HashSet<>();

  EngineSettings(String context, Configuration conf) {
    this.context = context;
    this.settings = of(conf);
  }

  /** The client keys as set, by name (raw text; unset keys absent). */
  Map<String, String> asMap() {
    return settings;
  }

  /** The client keys of the catalogue as set in {@code conf} (raw text, unset keys absent). */
  static Map<String, String> of(Configuration conf) {
    Map<String, String> out = new TreeMap<>();
    for (ConfigKey<?> key : ScrKeys.all()) {
      String raw = conf.getTrimmed(key.name());
      if (raw != null) {
        out.put(key.name(), raw);
      }
    }
    return out;
  }

  /**
   * Logs once per set of differing keys that {@code conf} asks for other settings than the engine
   * was built from.
   */
  synchronized void warnIfDiffer(Configuration conf) {
    Map<String, String> requested = of(conf);
    if (requested.equals(settings)) {
      return;
    }
    Set<String> keys = new TreeSet<>(settings.keySet());
    keys.addAll(requested.keySet());
    List<String> differences = new ArrayList<>();
    for (String k : keys) {
      String inUse = settings.get(k);
      String asked = requested.get(k);
      if (!Objects.equals(inUse, asked)) {
        differences.add(
            k
                + "="
                + (inUse == null ? "(unset)" : inUse)
                + " in use, "
                + (asked == null ? "(unset)" : asked)
                + " requested");
      }
    }
    if (warnedDifferences.add(String.join(";", differences))) {
      LOG.warn(
          "The scr engine of client context '{}' already exists with other settings, and this"
              + " configuration shares it as is: {}. To give this configuration its own engine,"
              + " set "
              + ScrKeys.CLIENT_CONTEXT.name()
              + " (or "
              + ScrKeys.DFS_CLIENT_CONTEXT.name()
              + ") to a name of its own",
          context,
          differences);
    }
  }
}
