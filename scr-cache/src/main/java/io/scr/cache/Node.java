package io.scr.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * One cache entry: a key, its value once loaded, a lease count and its place in its stripe's access
 * list.
 *
 * <p><b>State word.</b> {@code state} packs a RETIRED flag (the sign bit) and the lease count (the
 * other 31 bits). It only changes by CAS or atomic add:
 *
 * <ul>
 *   <li>a lease is taken by CAS {@code c -> c + 1}, only while RETIRED is clear;
 *   <li>a lease is returned by atomic add {@code -1};
 *   <li>the entry is retired (removed, evicted, expired, invalidated, closed) by CAS setting
 *       RETIRED; eviction and expiry only retire from exactly {@code 0}, so a leased entry is never
 *       evicted.
 * </ul>
 *
 * <p>The value is closed by whichever thread makes the word exactly {@code RETIRED | 0}: the
 * retirer if the count was 0, else the thread returning the last lease. That transition happens
 * once, so every value is closed exactly once and never while leased.
 *
 * <p><b>Publication.</b> A node enters the map while loading, with {@code value == null}, count 1
 * (the loader's own lease) and a non-null {@code loading} future that waiters block on. The loader
 * writes {@code fdCost} and {@code loadedAt}, then the volatile {@code value}, then completes the
 * future; a reader that sees a non-null {@code value} therefore sees both fields.
 *
 * <p><b>Access list.</b> {@code prev}, {@code next} and {@code linked} belong to the lock of {@link
 * #stripe}. They are not annotated {@code @GuardedBy} because Error Prone cannot express "the lock
 * of the stripe this node belongs to" when a stripe walks other nodes; every access is in {@link
 * Stripe}, under its lock.
 */
final class Node<K, V extends CachedValue> {
  static final int RETIRED = Integer.MIN_VALUE;
  static final int COUNT_MASK = Integer.MAX_VALUE;

  private static final VarHandle STATE;
  private static final VarHandle IDLE_SINCE;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      STATE = l.findVarHandle(Node.class, "state", int.class);
      IDLE_SINCE = l.findVarHandle(Node.class, "idleSince", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  final K key;
  final Stripe<K, V> stripe;

  /** Null while loading and after a failed load; written once. */
  volatile V value;

  /** Non-null while loading; completed (normally or exceptionally) when the load ends. */
  volatile CompletableFuture<Void> loading;

  /** Written once before {@link #value} is published. */
  int fdCost;

  /** Ticker time the value was loaded; written once before {@link #value} is published. */
  long loadedAt;

  @SuppressWarnings("unused") // accessed through STATE
  private volatile int state;

  @SuppressWarnings("unused") // accessed through IDLE_SINCE, with opaque ordering
  private long idleSince;

  // Access list links, owned by stripe.lock (see class comment).
  Node<K, V> prev;
  Node<K, V> next;
  boolean linked;

  /** Creates a loading node, leased once by its loader. */
  Node(K key, Stripe<K, V> stripe) {
    this.key = key;
    this.stripe = stripe;
    this.loading = new CompletableFuture<>();
    STATE.setRelease(this, 1);
  }

  /** Creates a list sentinel. */
  Node(Stripe<K, V> stripe) {
    this.key = null;
    this.stripe = stripe;
  }

  int state() {
    return (int) STATE.getVolatile(this);
  }

  static int count(int state) {
    return state & COUNT_MASK;
  }

  /** Takes a lease unless the node is retired. Lock-free. */
  boolean tryAcquire() {
    for (; ; ) {
      int s = (int) STATE.getVolatile(this);
      if (s < 0) {
        return false;
      }
      if (STATE.compareAndSet(this, s, s + 1)) {
        return true;
      }
    }
  }

  /** Returns a lease; returns the new state word. */
  int releaseOne() {
    return (int) STATE.getAndAdd(this, -1) - 1;
  }

  /**
   * Sets RETIRED whatever the count; returns the state before, or -1 (any negative) if it was
   * already retired.
   */
  int retire() {
    for (; ; ) {
      int s = (int) STATE.getVolatile(this);
      if (s < 0) {
        return s;
      }
      if (STATE.compareAndSet(this, s, s | RETIRED)) {
        return s;
      }
    }
  }

  /** Retires the node only if it is idle (count 0, not retired). */
  boolean retireIfIdle() {
    return STATE.compareAndSet(this, 0, RETIRED);
  }

  /** Records when the node's current lease holder started returning it; opaque, no fence. */
  void setIdleSince(long nanos) {
    IDLE_SINCE.setOpaque(this, nanos);
  }

  long idleSince() {
    return (long) IDLE_SINCE.getOpaque(this);
  }

  @Override
  public String toString() {
    return "Node{" + key + ", state=" + Integer.toHexString(state()) + "}";
  }
}
