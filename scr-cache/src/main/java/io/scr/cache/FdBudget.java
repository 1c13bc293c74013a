package io.scr.cache;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * A cache's fd budget: {@link #held} counts the fds of values not yet closed plus the reservations
 * of loads in progress, and never exceeds the budget. A load reserves before calling its loader,
 * evicting idle entries (through the cache's evictor) and waiting for the closer if needed.
 *
 * <p>Thread-safety: lock-free but for the wait of a load short of budget, which waits on {@link
 * #monitor} (it guards nothing but that wait; {@link #waiters} is written under it and read without
 * it, so a closer skips the monitor when nobody waits). Time comes only from the cache's {@link
 * Ticker}.
 */
final class FdBudget {
  /** The longest single wait before the budget is looked at again. */
  private static final long MAX_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private final String name;
  private final long budget;
  private final Duration maxWait;
  private final Ticker ticker;

  /** Fds of unclosed values plus reservations of loads in progress. */
  private final AtomicLong held = new AtomicLong();

  /** Fds of values queued for the closer: what a load short of budget may wait for. */
  private final AtomicLong closing = new AtomicLong();

  private final Object monitor = new Object();

  /** Loads waiting on {@link #monitor}: written under it, read without it by {@link #signal}. */
  private volatile int waiters;

  FdBudget(String name, long budget, Duration maxWait, Ticker ticker) {
    this.name = name;
    this.budget = budget;
    this.maxWait = maxWait;
    this.ticker = ticker;
  }

  /**
   * Reserves {@code amount} fds for loading {@code key}: at once if they fit; else evicts one idle
   * entry at a time ({@code evictOne}, true when it retired one) and waits for the closer, up to
   * the budget's maximum wait.
   *
   * @throws FdBudgetExhaustedException nothing idle to evict and nothing being closed, or the wait
   *     ran out
   * @throws InterruptedIOException interrupted while waiting
   */
  void reserve(int amount, Object key, BooleanSupplier evictOne) throws IOException {
    long deadline = 0;
    boolean waited = false;
    for (; ; ) {
      long h = held.get();
      if (h + amount <= budget) {
        if (held.compareAndSet(h, h + amount)) {
          return;
        }
        continue;
      }
      boolean evicted = evictOne.getAsBoolean();
      if (!evicted && closing.get() == 0) {
        throw exhausted(key, amount);
      }
      long now = ticker.read();
      if (!waited) {
        waited = true;
        deadline = now + maxWait.toNanos();
      } else if (now - deadline >= 0) {
        throw exhausted(key, amount);
      }
      awaitFreed(Math.min(deadline - now, MAX_WAIT_NANOS), amount, key);
    }
  }

  private void awaitFreed(long nanos, int amount, Object key) throws InterruptedIOException {
    synchronized (monitor) {
      waiters++;
      try {
        if (held.get() + amount > budget && closing.get() > 0 && nanos > 0) {
          TimeUnit.NANOSECONDS.timedWait(monitor, nanos);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        InterruptedIOException ie =
            new InterruptedIOException("interrupted waiting for fd budget to load " + key);
        ie.initCause(e);
        throw ie;
      } finally {
        waiters--;
      }
    }
  }

  private FdBudgetExhaustedException exhausted(Object key, int amount) {
    return new FdBudgetExhaustedException(
        String.format(
            "%s: no room for %d more fds to load %s: %d of the fd budget %d are held and every"
                + " cached value is leased; raise the fd budget or the process fd limit",
            name, amount, key, held.get(), budget),
        null);
  }

  /** Gives back {@code amount} reserved fds (a failed load, a value that needs fewer). */
  void unreserve(long amount) {
    held.addAndGet(-amount);
    signal();
  }

  /** A value holding {@code fds} was queued for the closer. */
  void closing(long fds) {
    closing.addAndGet(fds);
  }

  /** A queued value holding {@code fds} was closed (or its close failed for good). */
  void closed(long fds) {
    closing.addAndGet(-fds);
    held.addAndGet(-fds);
    signal();
  }

  /** The fds held now: unclosed values and reservations. */
  long held() {
    return held.get();
  }

  private void signal() {
    if (waiters > 0) {
      synchronized (monitor) {
        monitor.notifyAll();
      }
    }
  }
}
