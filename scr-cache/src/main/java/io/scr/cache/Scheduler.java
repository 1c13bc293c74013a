package io.scr.cache;

import java.time.Duration;
import java.util.concurrent.Future;

/**
 * Runs a {@link LeaseCache}'s background work: closing retired values off the readers' threads (a
 * value's {@code close()} may block on a hung disk) and the periodic maintenance pass ({@link
 * LeaseCache#cleanUp()}). Without one ({@link LeaseCacheConfig.Builder#scheduler}) a cache runs
 * both on one daemon thread of its own, named after the cache with {@code -closer}, which {@link
 * LeaseCache#close()} stops. A test injects a scheduler that runs tasks only when told to, and with
 * a fake {@link Ticker} drives expiry and maintenance without sleeping.
 *
 * <p>Thread-safety: implementations must accept calls from any thread, including from inside a task
 * they run. The cache never calls them under one of its locks.
 */
public interface Scheduler {
  /**
   * Runs {@code task} once, soon, and not within this call: the caller may be a reader whose lease
   * release made a value closable.
   *
   * @throws java.util.concurrent.RejectedExecutionException if the scheduler no longer runs tasks
   *     (the cache then closes values on the calling thread)
   */
  void execute(Runnable task);

  /**
   * Runs {@code task} once, about {@code delay} from now; cancelling the returned future before it
   * starts prevents the run.
   *
   * @throws java.util.concurrent.RejectedExecutionException if the scheduler no longer runs tasks
   *     (the cache's maintenance then stops)
   */
  Future<?> schedule(Runnable task, Duration delay);
}
