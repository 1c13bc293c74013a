package io.scr.core.internal.engine;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads that open replicas ahead for streams that prefetch on open: a bounded queue ({@code
 * scr.client.prefetch.queue-size}), daemon threads that start on first use and stop after 30 s
 * idle; shut down by the engine's last close. A task is never run on the submitting thread and a
 * submit never blocks.
 *
 * <p>Thread-safety: thread-safe (a {@link ThreadPoolExecutor}).
 */
final class PrefetchThreads {
  private final ThreadPoolExecutor executor;

  PrefetchThreads(String context, int threads, int queue) {
    AtomicInteger serial = new AtomicInteger();
    executor =
        new ThreadPoolExecutor(
            threads,
            threads,
            30,
            TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(queue),
            r -> {
              Thread t = new Thread(r, "scr-prefetch-" + context + "-" + serial.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
    executor.allowCoreThreadTimeOut(true); // no thread exists until a stream prefetches
  }

  /** Queues {@code task}; false when the queue is full or the threads are shut down. */
  boolean submit(Runnable task) {
    try {
      executor.execute(task);
      return true;
    } catch (RejectedExecutionException e) {
      return false; // full, or shut down by a concurrent close
    }
  }

  /** Stops taking tasks; queued ones still run (and find the engine closed). */
  void shutdown() {
    executor.shutdown();
  }
}
