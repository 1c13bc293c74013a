package io.scr.cache;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache's background work on its {@link Scheduler} (by default one thread of the cache's own):
 * closing the values of retired, unleased entries, and the periodic maintenance run. It closes
 * values and frees their fds in the {@link FdBudget}; what maintenance does is the cache's.
 *
 * <p>Thread-safety: lock-free. The close queue is a concurrent queue; {@link #drainScheduled} makes
 * at most one pending drain task (the task clears it before it polls, so a value queued after the
 * clear submits another). Once {@link #stop} has begun, the thread that queues a value closes it.
 * No method is called under a cache lock.
 */
final class BackgroundWork<K, V extends CachedValue> {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseCache.class);

  /** How long {@link #stop} waits for the cache's own thread to finish a close in progress. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

  private final String name;
  private final FdBudget budget;
  private final Duration maintenanceInterval;
  private final Runnable maintenance;
  private final Scheduler scheduler;

  /**
   * The cache's own thread when no scheduler was injected (stopped by {@link #stop}), else null.
   */
  private final CloserThread ownThread;

  private final BackgroundFailures failures;
  private final LongAdder closeFailures = new LongAdder();

  /** Retired, unleased nodes whose values await closing. */
  private final ConcurrentLinkedQueue<Node<K, V>> closeQueue = new ConcurrentLinkedQueue<>();

  /**
   * A drain task is submitted and has not started draining: a close queued now will be seen by it.
   * The task clears this before it polls, so a node queued after the clear submits another task.
   */
  private final AtomicBoolean drainScheduled = new AtomicBoolean();

  /** The next maintenance run (cancelled by stop). */
  private volatile Future<?> nextMaintenance;

  /** True once the cache's close has begun: no more maintenance, refused tasks are expected. */
  private volatile boolean stopping;

  /** False once {@link #stop} has begun: closes then run on the thread that makes them due. */
  private volatile boolean closerRunning = true;

  /**
   * @param maintenance the cache's maintenance run, scheduled every {@link
   *     LeaseCacheConfig#maintenanceInterval()} from {@link #start}
   */
  BackgroundWork(LeaseCacheConfig config, FdBudget budget, Runnable maintenance) {
    this.name = config.name();
    this.budget = budget;
    this.maintenanceInterval = config.maintenanceInterval();
    this.maintenance = maintenance;
    this.failures = new BackgroundFailures(config.name(), config.ticker());
    this.ownThread =
        config.scheduler().isPresent() ? null : new CloserThread(config.name() + "-closer");
    this.scheduler = config.scheduler().orElse(ownThread);
  }

  /** Schedules the first maintenance run. */
  void start() {
    scheduleMaintenance();
  }

  /** Hands a retired, unleased node's value to the closer. Called once per value, no lock held. */
  void scheduleClose(Node<K, V> n) {
    budget.closing(n.fdCost);
    closeQueue.add(n);
    if (!closerRunning) {
      drainCloseQueue(); // the cache is closing: close on this (lock-free) thread
    } else if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
      try {
        scheduler.execute(this::runDrain);
      } catch (RejectedExecutionException e) {
        drainScheduled.set(false);
        if (!stopping) { // after close began, the cache's own thread refuses tasks: expected
          LOG.warn("{}: the scheduler refused a close task; closing on this thread", name);
        }
        drainCloseQueue();
      }
    }
  }

  /** The close task: closes every queued value; a failure is logged and the next one closed. */
  private void runDrain() {
    drainScheduled.set(false);
    Node<K, V> n;
    while ((n = closeQueue.poll()) != null) {
      try {
        closeNow(n);
      } catch (RuntimeException | Error e) {
        failures.failed(e);
      }
    }
  }

  private void drainCloseQueue() {
    Node<K, V> n;
    while ((n = closeQueue.poll()) != null) {
      closeNow(n);
    }
  }

  private void closeNow(Node<K, V> n) {
    try {
      closeQuietly(n.value, n.key);
    } finally {
      // Even when close() threw an Error: the fds are as closed as they will ever be, and a
      // budget that kept counting them would refuse loads for good.
      budget.closed(n.fdCost);
    }
  }

  /** Closes {@code v}, counting and logging an {@code IOException} or runtime failure. */
  void closeQuietly(V v, K key) {
    try {
      v.close();
    } catch (IOException | RuntimeException e) {
      closeFailures.increment();
      LOG.warn("{}: closing the value for {} failed", name, key, e);
    }
  }

  /** Values whose {@code close()} failed. */
  long closeFailures() {
    return closeFailures.sum();
  }

  private void scheduleMaintenance() {
    if (stopping) {
      return;
    }
    try {
      nextMaintenance = scheduler.schedule(this::runMaintenance, maintenanceInterval);
    } catch (RejectedExecutionException e) {
      if (!stopping) { // after close began, the cache's own thread refuses tasks: expected
        LOG.warn("{}: the scheduler refused the maintenance task; maintenance stops", name);
      }
    }
  }

  /**
   * The maintenance task: one run of the cache's maintenance, then the next one an interval later.
   * A failure (an {@code Error} from a value's {@code isValid}, say) is logged and the next run
   * still scheduled.
   */
  private void runMaintenance() {
    if (stopping) {
      return;
    }
    try {
      maintenance.run();
      failures.succeeded();
    } catch (RuntimeException | Error e) {
      failures.failed(e);
    } finally {
      scheduleMaintenance();
    }
  }

  /** The cache's close has begun: maintenance stops, and refused tasks are no longer warned of. */
  void stopping() {
    stopping = true;
  }

  /**
   * After the cache retired every entry: closes from now on run on the thread that makes them due;
   * cancels maintenance, stops the cache's own thread (waiting up to 30 s for a close in progress)
   * and closes what is still queued. With an injected scheduler it does not wait for a task already
   * running there. Keeps the caller's interrupt.
   */
  void stop() {
    closerRunning = false;
    Future<?> next = nextMaintenance;
    if (next != null) {
      next.cancel(/* mayInterruptIfRunning= */ false);
    }
    boolean interrupted = false;
    if (ownThread != null) {
      try {
        if (!ownThread.stop(STOP_TIMEOUT)) {
          LOG.warn("{}: closer thread did not stop within 30 s", name);
        }
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    drainCloseQueue();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
