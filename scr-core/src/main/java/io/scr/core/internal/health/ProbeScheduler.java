package io.scr.core.internal.health;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where {@link DataNodeHealth} runs its probes: injected, so tests run them by hand on a fake
 * clock.
 */
@FunctionalInterface
public interface ProbeScheduler {
  /** Runs {@code task} once, {@code delayNanos} from now (0: as soon as possible). */
  void schedule(Runnable task, long delayNanos);

  /**
   * One daemon thread ({@code scr-health-probe}) that exists only while a probe is due: it is
   * started by the first probe and ends one second after the last, so a process whose DataNodes are
   * all healthy has no such thread.
   */
  static ProbeScheduler daemonThread() {
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "scr-health-probe");
              t.setDaemon(true);
              return t;
            });
    executor.setKeepAliveTime(1, TimeUnit.SECONDS);
    executor.allowCoreThreadTimeOut(true);
    executor.setRemoveOnCancelPolicy(true);
    return (task, delayNanos) -> executor.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
  }
}
