package io.scr.cache;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.FutureTask;

/**
 * A {@link Scheduler} that runs nothing until the test calls {@link #runDue()}, and reads due times
 * from a {@link FakeTicker}: with it, maintenance and closing run on the test's thread at the
 * ticker time the test chose.
 */
final class ManualScheduler implements Scheduler {
  private final FakeTicker ticker;
  private final List<Task> tasks = new ArrayList<>();

  private static final class Task {
    final FutureTask<Void> future;
    final long dueAt;

    Task(Runnable task, long dueAt) {
      this.future = new FutureTask<>(task, null);
      this.dueAt = dueAt;
    }
  }

  ManualScheduler(FakeTicker ticker) {
    this.ticker = ticker;
  }

  @Override
  public synchronized void execute(Runnable task) {
    tasks.add(new Task(task, ticker.read()));
  }

  @Override
  public synchronized FutureTask<Void> schedule(Runnable task, Duration delay) {
    Task t = new Task(task, ticker.read() + delay.toNanos());
    tasks.add(t);
    return t.future;
  }

  /** Tasks submitted and not yet run or cancelled. */
  synchronized int pending() {
    tasks.removeIf(t -> t.future.isCancelled());
    return tasks.size();
  }

  /**
   * Runs, on this thread, every task due at the ticker's time, including those the tasks submit;
   * returns how many ran.
   */
  int runDue() {
    int ran = 0;
    while (true) {
      Task next = null;
      synchronized (this) {
        long now = ticker.read();
        for (Task t : tasks) {
          if (now - t.dueAt >= 0 && (next == null || t.dueAt - next.dueAt < 0)) {
            next = t;
          }
        }
        if (next == null) {
          return ran;
        }
        tasks.remove(next);
      }
      if (!next.future.isCancelled()) {
        next.future.run();
        ran++;
      }
    }
  }
}
