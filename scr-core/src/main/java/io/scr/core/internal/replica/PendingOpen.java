package io.scr.core.internal.replica;

import java.io.InterruptedIOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One replica a batched prefetch means to open, as a reader's load of the same replica sees it:
 * while it is only queued in the batch a reader takes it over (the batch leaves it out and the
 * reader opens it itself: it never waits behind other blocks); once the batch was sent a reader
 * waits for the batch's answer and takes the opened replica, so the DataNode is asked once.
 *
 * <p>Ownership: the replica {@link #complete} stores belongs to whoever {@link #claim}s it first (a
 * waiting reader's load, which hands it to the cache, or the prefetch, which does the same or
 * closes it); nobody else may use it.
 *
 * <p>Concurrency: lock-free. The state moves once, QUEUED to SENT (the prefetch) or QUEUED to TAKEN
 * (a reader); {@link #complete} is called once by the prefetch, after which waiters wake.
 */
final class PendingOpen {
  private static final int QUEUED = 0;
  private static final int SENT = 1;
  private static final int TAKEN = 2;

  private final AtomicInteger state = new AtomicInteger(QUEUED);
  private final AtomicReference<Replica> replica = new AtomicReference<>();
  private final CountDownLatch done = new CountDownLatch(1);

  /** The prefetch: whether the block goes into the batch (false: a reader took it over). */
  boolean send() {
    return state.compareAndSet(QUEUED, SENT);
  }

  /** The prefetch: the batch answered (null: not opened); wakes the waiting readers. */
  void complete(Replica opened) {
    if (done.getCount() == 0) {
      return;
    }
    if (opened != null) {
      replica.set(opened);
    }
    done.countDown();
  }

  /** The opened replica if nobody claimed it yet; the caller owns it then. */
  Replica claim() {
    return replica.getAndSet(null);
  }

  /**
   * A reader's load: takes the block over if the batch was not sent yet (returns null: open it
   * yourself), else waits at most {@code timeoutNanos} for the batch and claims its replica (null
   * when the batch did not open it, or when the wait timed out: open it yourself).
   *
   * @throws InterruptedIOException if interrupted while waiting (the interrupt status is kept)
   */
  Replica takeOverOrAwait(long timeoutNanos) throws InterruptedIOException {
    if (state.compareAndSet(QUEUED, TAKEN) || state.get() == TAKEN) {
      return null;
    }
    try {
      if (!done.await(timeoutNanos, TimeUnit.NANOSECONDS)) {
        return null;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for a prefetch's batched fd request");
    }
    return claim();
  }
}
