package io.scr.core.internal.engine;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.ScrKeys;
import java.io.File;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The process's engines, one per client context, with their reference counts: {@link
 * Engine#acquire} creates or shares one, {@link Engine#close} drops a reference and closes the
 * engine with the last.
 *
 * <p>Thread-safety: the map and every count are guarded by {@link #LOCK}, taken only by acquire and
 * release, never by a read. An engine is built under the lock, so two first acquires of one context
 * build one engine (a third context's acquire waits for that build).
 */
final class EngineRegistry {
  private static final Object LOCK = new Object();

  @GuardedBy("LOCK")
  private static final Map<String, Registered> ENGINES = new HashMap<>();

  /** An engine and its references; the count is guarded by {@link #LOCK}. */
  private static final class Registered {
    final Engine client;

    @GuardedBy("LOCK")
    int references;

    Registered(Engine client) {
      this.client = client;
    }
  }

  private EngineRegistry() {}

  /** See {@link Engine#acquire(Configuration, EngineSeams)}; {@code seams} may be null. */
  static Engine acquire(Configuration conf, EngineSeams seams) {
    String context = contextOf(conf);
    synchronized (LOCK) {
      Registered r = ENGINES.get(context);
      if (r == null) {
        r =
            new Registered(
                new Engine(
                    conf,
                    context,
                    Ticker.systemTicker(),
                    File::list,
                    seams == null ? EngineSeams.NONE : seams));
        ENGINES.put(context, r);
        r.client.startObservability();
      } else if (seams != null) {
        throw new IllegalStateException(
            "client context "
                + context
                + " already has an engine; seams need a context of their own");
      } else {
        r.client.warnIfSettingsDiffer(conf);
      }
      r.references++;
      return r.client;
    }
  }

  /** {@code scr.client.context}, else {@code dfs.client.context}. */
  static String contextOf(Configuration conf) {
    String context = ScrKeys.CLIENT_CONTEXT.get(conf::get);
    return context == null || context.isEmpty()
        ? ScrKeys.DFS_CLIENT_CONTEXT.get(conf::get)
        : context;
  }

  /** The engine of {@code context} while it has references, without taking one; else null. */
  static Engine running(String context) {
    synchronized (LOCK) {
      Registered r = ENGINES.get(context);
      return r == null ? null : r.client;
    }
  }

  /**
   * Drops one reference of {@code client}; true when it was the last (the engine is out of the
   * registry and the caller closes it). False for calls beyond the acquires and for engines never
   * acquired through the registry (tests build some directly).
   */
  static boolean release(Engine client) {
    synchronized (LOCK) {
      Registered r = ENGINES.get(client.context());
      if (r == null || r.client != client || r.references == 0) {
        return false;
      }
      if (--r.references > 0) {
        return false;
      }
      ENGINES.remove(client.context());
      return true;
    }
  }
}
