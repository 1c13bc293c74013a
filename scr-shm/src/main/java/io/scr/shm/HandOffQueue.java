package io.scr.shm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Threads waiting for an item, and the hand-off of items to them: the waiter queue of a {@link
 * SlotPool}, kept apart from slots so that its protocol can be model-checked on its own ({@code
 * HandOffQueueModelTest}).
 *
 * <p><b>Contract.</b> An item {@link #offer offered} goes to the oldest waiter still waiting, or,
 * if there is none, back to the offerer ({@code offer} returns false). Each waiter moves from
 * WAITING to FILLED (by the one thread whose {@code offer} stored an item in it) or to CANCELLED
 * (by the waiter, {@link #leave}) exactly once, by CAS, so an item is handed at most once, never to
 * a departed waiter, and a waiter that failed to leave has been filled and must take its item.
 * Waiters are filled in the order they {@link #join joined}. Nothing here decides who may take
 * items <em>without</em> queueing: that is the pool's policy (see {@link SlotPool}).
 *
 * <p><b>Concurrency.</b> Lock-free: the queue is a {@link ConcurrentLinkedQueue} that may still
 * hold departed (cancelled or filled) entries; {@code offer} polls past them. The count of WAITING
 * entries is kept separately so that the common "is anyone waiting?" check is one volatile read; it
 * may dip below zero for an instant (a waiter filled between its join's add and increment), so only
 * {@code > 0} is ever tested. A thread is unparked whenever something it waits for may have
 * happened: after a fill, and, by {@link #leave}, the next waiter (which may now be the oldest).
 *
 * @param <T> what is handed over
 */
final class HandOffQueue<T> {
  /** Callers waiting for an item, oldest first; may hold departed entries. */
  private final ConcurrentLinkedQueue<Waiter<T>> queue = new ConcurrentLinkedQueue<>();

  /** Waiters in state WAITING (may dip below zero for an instant; only {@code > 0} is tested). */
  private final AtomicInteger waiting = new AtomicInteger();

  /** Unparks a thread: {@link LockSupport#unpark}, or a recorder in the model test. */
  private final Consumer<Thread> waker;

  HandOffQueue() {
    this(LockSupport::unpark);
  }

  /**
   * A queue whose wake-ups go to {@code waker} (the model test's park without spurious returns).
   */
  HandOffQueue(Consumer<Thread> waker) {
    this.waker = waker;
  }

  /**
   * Queues the calling thread. Queue first, count second: whoever sees the count finds the entry.
   */
  Waiter<T> join() {
    Waiter<T> me = new Waiter<>(Thread.currentThread());
    queue.add(me);
    waiting.incrementAndGet();
    return me;
  }

  /** Whether some waiter may be WAITING (one volatile read). */
  boolean hasWaiters() {
    return waiting.get() > 0;
  }

  /** Whether {@code w} is at the head of the queue (the oldest entry not yet removed). */
  boolean isOldest(Waiter<T> w) {
    return queue.peek() == w;
  }

  /**
   * Hands {@code item} to the oldest waiter still waiting and unparks it; false when there is none
   * (then the item is still the caller's).
   */
  boolean offer(T item) {
    Waiter<T> w;
    while ((w = queue.poll()) != null) {
      if (w.fill(item)) {
        waiting.decrementAndGet();
        waker.accept(w.thread);
        return true;
      }
    }
    return false;
  }

  /**
   * Leaves the queue; false when an item was handed over first (then {@link Waiter#item()} must be
   * taken). A waiter that leaves wakes the next one still waiting: it may have been the oldest, and
   * the next one now is.
   */
  boolean leave(Waiter<T> me) {
    if (!me.cancel()) {
      return false;
    }
    waiting.decrementAndGet();
    queue.remove(me);
    if (waiting.get() > 0) {
      unparkOldestWaiting();
    }
    return true;
  }

  /** Wakes the oldest waiter still waiting (the queue may start with departed entries). */
  void unparkOldestWaiting() {
    for (Waiter<T> w : queue) {
      if (w.isWaiting()) {
        waker.accept(w.thread);
        return;
      }
    }
  }

  /** Wakes every queued thread (the pool is closing: each sees that and leaves). */
  void unparkAll() {
    for (Waiter<T> w : queue) {
      waker.accept(w.thread);
    }
  }

  /**
   * One queued thread. WAITING → FILLED (the filling thread stored {@code item} before its CAS, so
   * the waiter sees it after reading FILLED) or WAITING → CANCELLED (the waiter left).
   */
  static final class Waiter<T> {
    private static final int WAITING = 0;
    private static final int FILLED = 1;
    private static final int CANCELLED = 2;
    private static final VarHandle STATE;

    static {
      try {
        STATE = MethodHandles.lookup().findVarHandle(Waiter.class, "state", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    final Thread thread;
    private volatile int state;

    /**
     * Written by the filling thread before its CAS, read by the waiter after it saw FILLED. Only
     * one thread ever fills a given waiter: {@link #offer} reaches it through {@code poll}, which
     * hands each entry to one poller.
     */
    private T item;

    Waiter(Thread thread) {
      this.thread = thread;
    }

    boolean fill(T s) {
      item = s;
      return STATE.compareAndSet(this, WAITING, FILLED);
    }

    boolean cancel() {
      return STATE.compareAndSet(this, WAITING, CANCELLED);
    }

    boolean isFilled() {
      return state == FILLED;
    }

    boolean isWaiting() {
      return state == WAITING;
    }

    /** The item handed over; only after {@link #isFilled()} returned true. */
    T item() {
      return item;
    }
  }
}
