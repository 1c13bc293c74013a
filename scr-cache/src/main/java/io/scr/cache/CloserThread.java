package io.scr.cache;

import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The {@link Scheduler} a cache uses when none is injected: one daemon thread of its own, started
 * with the first task, and stopped by {@link #stop}, which the cache's {@code close()} calls.
 *
 * <p>Thread-safety: safe for any thread. Tasks run one at a time, in order of their due time.
 */
final class CloserThread implements Scheduler {
  private final ScheduledThreadPoolExecutor executor;

  /** The executor's one thread once it has started (it is started by the first task). */
  private volatile Thread thread;

  CloserThread(String threadName) {
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              thread = t;
              return t;
            });
    executor.setRemoveOnCancelPolicy(true);
    // Whatever is still queued at stop is the cache's to finish: it drains its close queue itself.
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  @Override
  public void execute(Runnable task) {
    executor.execute(task);
  }

  @Override
  public Future<?> schedule(Runnable task, Duration delay) {
    return executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Lets the task running now finish, drops the queued ones, and waits up to {@code timeout} for
   * the thread to end. Returns false if it is still running then (a value's close hangs).
   */
  boolean stop(Duration timeout) throws InterruptedException {
    executor.shutdown();
    Thread t = thread;
    if (t == Thread.currentThread()) {
      return true; // stopped from one of its own tasks: it ends when that task returns
    }
    if (!executor.awaitTermination(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
      return false;
    }
    if (t != null) {
      t.join(TimeUnit.SECONDS.toMillis(1)); // it ends right after the executor terminates
      return !t.isAlive();
    }
    return true;
  }
}
