package io.scr.cache;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LeaseCache} implementation, its lookup and its entries' lifecycle: a {@link
 * ConcurrentHashMap} of {@link Node}s, lock stripes that keep per-stripe access lists for eviction,
 * loads, retirement, eviction for size, expiry sweeps and counters. Two parts have a class of their
 * own: the fd budget ({@link FdBudget}) and the background work ({@link BackgroundWork}: closing
 * retired values and scheduling maintenance, by default on one thread of the cache's own).
 *
 * <p><b>Concurrency contract.</b>
 *
 * <ul>
 *   <li><b>Hit path, lock-free:</b> a map {@code get}, a CAS on the node's state word to take the
 *       lease, {@link CachedValue#isValid()} (asked only while leased, so never of a value being
 *       closed), and a {@link LongAdder} hit count. Returning the lease is an atomic decrement
 *       plus, once per clock tick, an opaque store of the idle time (from {@link #clock}, never the
 *       ticker) and one CAS recording the release in the stripe's lossy buffer. No lock is taken
 *       while the cache is within capacity, except a {@code tryLock} when the buffer is full. A
 *       release that makes an entry idle while the cache is <em>over</em> capacity evicts on the
 *       releasing thread ({@code becameIdle → evictForSize}), taking stripe locks with a blocking
 *       {@code lock()}, as a load does. LRU order and idle times have the resolution of the clock
 *       tick: the maintenance interval, or the time between loads if those are more frequent.
 *   <li><b>Stripe locks</b> ({@link Stripe#lock}) own each stripe's access list. They are taken to
 *       link a loaded entry, to replay the buffer, to pick and retire eviction victims and to sweep
 *       for expiry. Map removals, counters and close scheduling happen after unlocking. No loader,
 *       value {@code close()}, invalidation predicate or scheduler call ever runs under a stripe
 *       lock; the one value method that does is {@link CachedValue#isValid()}, asked by the
 *       maintenance sweep (see {@link Stripe}).
 *   <li><b>Loads</b> run on the leasing thread with no lock held. The loading node sits in the map
 *       so concurrent leases of the key wait on its future: the loader is called once. A load
 *       reserves {@code typicalFdCost} in the {@link FdBudget} first (evicting idle entries,
 *       waiting for the closer); a value that reports more fds reserves the difference after
 *       loading, and is closed on the loading thread and refused if it cannot (it was never
 *       published).
 *   <li><b>Closing</b> is {@link BackgroundWork}'s, outside every lock; once {@link #close()} has
 *       begun, the thread that retires a value or returns its last lease closes it.
 *   <li><b>Time</b> comes only from the {@link Ticker}: idle stamps, expiry, load times, the fd
 *       budget's wait and failure-log intervals. The scheduler decides only when tasks run.
 *   <li><b>Benign races:</b> the entry count can pass capacity while leases pin entries, or briefly
 *       while two threads evict; lost buffer records leave LRU order approximate; {@link #stats()}
 *       reads counters one by one.
 * </ul>
 */
final class StripedLeaseCache<K, V extends CachedValue>
    implements LeaseCache<K, V>, ReusableLease.NodeReleaser {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseCache.class);

  private final LeaseCacheConfig config;
  private final LeaseCacheConfig.Sizing sizing;
  private final Ticker ticker;
  private final int capacity;
  private final long fdBudget;
  private final long idleExpiryNanos;
  private final ConcurrentHashMap<K, Node<K, V>> map;
  private final Stripe<K, V>[] stripes;
  private final int stripeMask;

  /** Linked entries, across all stripes. */
  private final AtomicInteger entries = new AtomicInteger();

  /** Fds of unclosed values plus reservations of loads in progress, within the budget. */
  private final FdBudget budget;

  /**
   * The ticker's time as of the last maintenance run or load: what a release stamps as its idle
   * time. Reading the ticker on every release would put a {@code System.nanoTime()} (25 ns to over
   * 100 ns, depending on the clock source and virtualisation) on the hit path; idle times are
   * instead as coarse as the maintenance interval. Written racily by several threads; a stamp that
   * is slightly old only makes an entry expire slightly early.
   */
  private volatile long clock;

  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder loads = new LongAdder();
  private final LongAdder loadFailures = new LongAdder();
  private final LongAdder loadNanos = new LongAdder();
  private final AtomicLong maxLoadNanos = new AtomicLong();
  private final LongAdder youngSizeEvictions = new LongAdder();
  private final EnumMap<RemovalCause, LongAdder> removals = new EnumMap<>(RemovalCause.class);

  private final ThrashDetector thrash;

  /** Closing retired values and maintenance, on the scheduler. */
  private final BackgroundWork<K, V> background;

  private volatile boolean closed;

  @SuppressWarnings({"unchecked", "rawtypes"})
  StripedLeaseCache(LeaseCacheConfig config) {
    this.config = config;
    this.sizing = config.resolveSizing();
    this.ticker = config.ticker();
    this.capacity = sizing.capacity();
    this.fdBudget = sizing.fdBudget();
    this.idleExpiryNanos = config.idleExpiry().toNanos();
    int n = config.stripes();
    this.stripes = new Stripe[n];
    for (int i = 0; i < n; i++) {
      stripes[i] = new Stripe<>(i);
    }
    this.stripeMask = n - 1;
    this.map = new ConcurrentHashMap<>(Math.min(capacity, 1 << 16), 0.75f, n);
    for (RemovalCause c : RemovalCause.values()) {
      removals.put(c, new LongAdder());
    }
    this.thrash = new ThrashDetector(config, sizing);
    this.clock = ticker.read();
    if ((long) capacity * config.typicalFdCost() > fdBudget) {
      LOG.warn(
          "{}: capacity {} x {} fds per value exceeds the fd budget {}; the budget will bind first",
          config.name(),
          capacity,
          config.typicalFdCost(),
          fdBudget);
    }
    LOG.info("{}: {}, {} stripes", config.name(), sizing.reason(), n);
    this.budget = new FdBudget(config.name(), fdBudget, config.fdBudgetWait(), ticker);
    this.background = new BackgroundWork<>(config, budget, this::cleanUp);
    background.start();
  }

  // ---------------------------------------------------------------------------------------------
  // Leasing

  @Override
  public Lease<V> lease(K key, ValueLoader<? super K, ? extends V> loader) throws IOException {
    // Kept small so it inlines into the caller and the lease can be scalar-replaced.
    Node<K, V> n = acquireIfPresent(key);
    return new NodeLease<>(this, n != null ? n : leaseSlow(key, loader));
  }

  @Override
  public void lease(K key, ValueLoader<? super K, ? extends V> loader, ReusableLease<V> into)
      throws IOException {
    into.checkClosed();
    Node<K, V> n = acquireIfPresent(key);
    into.open(this, n != null ? n : leaseSlow(key, loader));
  }

  @Override
  public boolean leaseIfPresent(K key, ReusableLease<V> into) {
    into.checkClosed();
    Node<K, V> n = acquireIfPresent(key);
    if (n == null) {
      return false;
    }
    into.open(this, n);
    return true;
  }

  /**
   * The hit path: a leased node holding a valid value, or null (nothing changed: a stale entry is
   * left to the miss path, which retires it and loads afresh).
   *
   * <p>The lease is taken <em>before</em> {@link CachedValue#isValid()} is asked: a value is never
   * closed while leased, so validity is only ever checked on an open value. The other order let a
   * reader check a value the closer thread was closing at that moment; for a replica that meant
   * reading a shared-memory slot whose segment was being unmapped.
   */
  private Node<K, V> acquireIfPresent(K key) {
    Node<K, V> n = map.get(key);
    if (n != null) {
      V v = n.value;
      if (v != null && n.tryAcquire()) {
        if (v.isValid()) {
          hits.increment();
          return n;
        }
        release(n);
      }
    }
    return null;
  }

  @Override
  @SuppressWarnings("unchecked")
  public void releaseNode(Node<?, ?> n) {
    release((Node<K, V>) n); // a reusable lease only ever holds nodes of the cache that opened it
  }

  /** The miss path: returns the node, leased for the caller, loading it if needed. */
  private Node<K, V> leaseSlow(K key, ValueLoader<? super K, ? extends V> loader)
      throws IOException {
    misses.increment();
    thrash.missedKeys.offer(key.hashCode());
    for (; ; ) {
      if (closed) {
        throw new LeaseCacheClosedException(config.name() + " is closed; cannot lease " + key);
      }
      Node<K, V> n = map.get(key);
      if (n == null) {
        Node<K, V> fresh = new Node<>(key, stripeFor(key));
        n = map.putIfAbsent(key, fresh);
        if (n == null) {
          return load(fresh, loader);
        }
      }
      CompletableFuture<Void> pending = n.loading;
      if (pending != null) {
        awaitLoad(key, pending);
        continue;
      }
      V v = n.value;
      if (v != null && n.tryAcquire()) {
        if (v.isValid()) {
          return n;
        }
        retire(n, RemovalCause.STALE);
        release(n);
      } else {
        map.remove(key, n); // retired: finish its removal so the next round loads afresh
      }
    }
  }

  private void awaitLoad(K key, CompletableFuture<Void> pending) throws IOException {
    try {
      pending.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException ie =
          new InterruptedIOException("interrupted waiting for the load of " + key);
      ie.initCause(e);
      throw ie;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof FdBudgetExhaustedException) {
        throw new FdBudgetExhaustedException(cause.getMessage(), cause);
      }
      throw new LeaseLoadException("loading " + key + " failed: " + cause, cause);
    }
  }

  private Node<K, V> load(Node<K, V> fresh, ValueLoader<? super K, ? extends V> loader)
      throws IOException {
    K key = fresh.key;
    int reserved = config.typicalFdCost();
    try {
      budget.reserve(reserved, key, () -> evictOne(fresh.stripe.index, RemovalCause.FD_BUDGET));
    } catch (IOException | RuntimeException e) {
      failLoad(fresh, e);
      throw e;
    }
    long start = ticker.read();
    V v;
    try {
      v = loader.load(key);
      if (v == null) {
        throw new NullPointerException("the loader returned null for " + key);
      }
    } catch (Throwable e) { // even a sneaky checked exception must not leave waiters hanging
      recordLoadTime(ticker.read() - start);
      budget.unreserve(reserved);
      failLoad(fresh, e);
      if (e instanceof Error) {
        throw (Error) e;
      }
      throw new LeaseLoadException("loading " + key + " failed: " + e, e);
    }
    recordLoadTime(ticker.read() - start);
    int cost = v.fdCost();
    try {
      if (cost < 0) {
        throw new IllegalStateException(key + ": fdCost() " + cost + " is negative");
      }
      if (cost > reserved) {
        budget.reserve(
            cost - reserved, key, () -> evictOne(fresh.stripe.index, RemovalCause.FD_BUDGET));
      } else if (cost < reserved) {
        budget.unreserve(reserved - cost);
      }
    } catch (IOException | RuntimeException e) {
      budget.unreserve(reserved);
      fresh.fdCost = 0;
      failLoad(fresh, e);
      // Never published, leased or counted: closed here, outside every lock, rather than queued
      // for the closer, whose accounting would briefly count fds the budget refused.
      background.closeQuietly(v, key);
      throw e instanceof IOException
          ? (IOException) e
          : new LeaseLoadException("loading " + key + " failed: " + e, e);
    }
    fresh.fdCost = cost;
    fresh.loadedAt = advanceClock();
    fresh.value = v;
    Stripe<K, V> s = fresh.stripe;
    boolean cacheClosed = false;
    s.lock.lock();
    try {
      s.drainBuffer();
      if (s.closed) {
        cacheClosed = true;
      } else if (fresh.state() >= 0) {
        s.link(fresh);
        entries.incrementAndGet();
      }
    } finally {
      s.lock.unlock();
    }
    if (cacheClosed) {
      retire(fresh, RemovalCause.CACHE_CLOSED);
    }
    loads.increment();
    CompletableFuture<Void> pending = fresh.loading;
    fresh.loading = null;
    pending.complete(null);
    if (entries.get() > capacity) {
      evictForSize(s.index);
    }
    return fresh;
  }

  private void failLoad(Node<K, V> fresh, Throwable cause) {
    fresh.retire();
    map.remove(fresh.key, fresh);
    loadFailures.increment();
    CompletableFuture<Void> pending = fresh.loading;
    fresh.loading = null;
    pending.completeExceptionally(cause);
  }

  private void recordLoadTime(long nanos) {
    loadNanos.add(nanos);
    maxLoadNanos.accumulateAndGet(nanos, Math::max);
  }

  /**
   * Returns a lease. Lock-free unless this release fills the stripe's buffer ({@code tryLock}) or
   * the cache is over capacity (evicts, blocking on stripe locks).
   */
  void release(Node<K, V> n) {
    long now = clock;
    long before = n.idleSince();
    if (before != now) {
      n.setIdleSince(now);
    }
    int s = n.releaseOne();
    if (s == 0) {
      becameIdle(n, before != now);
    } else if (s == Node.RETIRED) {
      background.scheduleClose(n);
    }
  }

  /**
   * Records a release in the stripe's buffer only the first time the entry is released in a clock
   * tick: later releases in the same tick would move it among entries that are all equally recent
   * at the clock's resolution, so the hot path skips the buffer CAS for hot entries.
   */
  private void becameIdle(Node<K, V> n, boolean newTick) {
    if (newTick && n.stripe.recordIdle(n)) {
      n.stripe.tryDrain();
    }
    if (entries.get() > capacity) {
      evictForSize(n.stripe.index);
    }
  }

  /** Reads the ticker and publishes it as {@link #clock}; off the hit path only. */
  private long advanceClock() {
    long now = ticker.read();
    if (now - clock > 0) {
      clock = now;
    }
    return now;
  }

  private Stripe<K, V> stripeFor(K key) {
    int h = key.hashCode();
    h ^= h >>> 16;
    h *= 0x9E3779B9;
    return stripes[(h >>> 16) & stripeMask];
  }

  // ---------------------------------------------------------------------------------------------
  // Removal

  @Override
  public void invalidate(K key) {
    Node<K, V> n = map.get(key);
    if (n != null) {
      retire(n, RemovalCause.INVALIDATED);
    }
  }

  @Override
  public int invalidateIf(Predicate<? super K> predicate) {
    int removed = 0;
    for (Node<K, V> n : map.values()) {
      if (predicate.test(n.key) && retire(n, RemovalCause.INVALIDATED)) {
        removed++;
      }
    }
    return removed;
  }

  /** Retires {@code n} whatever its lease count; returns false if it was already retired. */
  private boolean retire(Node<K, V> n, RemovalCause cause) {
    int before = n.retire();
    if (before < 0) {
      return false;
    }
    Stripe<K, V> s = n.stripe;
    boolean wasLinked;
    s.lock.lock();
    try {
      wasLinked = s.unlink(n);
    } finally {
      s.lock.unlock();
    }
    finishRemoval(n, cause, wasLinked);
    if (Node.count(before) == 0 && n.value != null) {
      background.scheduleClose(n);
    }
    return true;
  }

  /** After a node was retired and unlinked under its stripe lock: map, counters. No lock held. */
  private void finishRemoval(Node<K, V> n, RemovalCause cause, boolean wasLinked) {
    map.remove(n.key, n);
    if (wasLinked) {
      entries.decrementAndGet();
    }
    removals.get(cause).increment();
  }

  /** Evicts idle entries, own stripe first, until the cache is within capacity or none is idle. */
  private void evictForSize(int home) {
    while (entries.get() > capacity) {
      if (!evictOne(home, RemovalCause.SIZE)) {
        return;
      }
    }
  }

  /** Retires the eldest idle entry of the first stripe, from {@code home} on, that has one. */
  private boolean evictOne(int home, RemovalCause cause) {
    for (int i = 0; i <= stripeMask; i++) {
      Stripe<K, V> s = stripes[(home + i) & stripeMask];
      Node<K, V> victim;
      s.lock.lock();
      try {
        s.drainBuffer();
        victim = s.retireEldestIdle();
      } finally {
        s.lock.unlock();
      }
      if (victim != null) {
        finishRemoval(victim, cause, true);
        if (cause == RemovalCause.SIZE && thrash.isYoung(victim.loadedAt, ticker.read())) {
          youngSizeEvictions.increment();
        }
        background.scheduleClose(victim);
        return true;
      }
    }
    return false;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    background.stopping();
    for (Stripe<K, V> s : stripes) {
      s.lock.lock();
      try {
        s.closed = true;
      } finally {
        s.lock.unlock();
      }
    }
    for (Node<K, V> n : map.values()) {
      retire(n, RemovalCause.CACHE_CLOSED);
    }
    background.stop();
  }

  // ---------------------------------------------------------------------------------------------
  // Maintenance and stats

  @Override
  public void cleanUp() {
    long now = advanceClock();
    List<Node<K, V>> expired = new ArrayList<>();
    List<Node<K, V>> stale = new ArrayList<>();
    for (Stripe<K, V> s : stripes) {
      s.lock.lock();
      try {
        s.drainBuffer();
        s.sweep(now, idleExpiryNanos, expired, stale);
      } finally {
        s.lock.unlock();
      }
      for (Node<K, V> n : expired) {
        finishRemoval(n, RemovalCause.EXPIRED, true);
        background.scheduleClose(n);
      }
      for (Node<K, V> n : stale) {
        finishRemoval(n, RemovalCause.STALE, true);
        background.scheduleClose(n);
      }
      expired.clear();
      stale.clear();
    }
    evictForSize(0);
    thrash.evaluate(
        now,
        new ThrashDetector.Counts(
            hits.sum(),
            misses.sum(),
            removals.get(RemovalCause.SIZE).sum(),
            youngSizeEvictions.sum()),
        capacity);
  }

  @Override
  public LeaseCacheStats stats() {
    int leased = 0;
    for (Node<K, V> n : map.values()) {
      int s = n.state();
      if (s > 0 && n.value != null) {
        leased++;
      }
    }
    EnumMap<RemovalCause, Long> removed = new EnumMap<>(RemovalCause.class);
    for (RemovalCause c : RemovalCause.values()) {
      removed.put(c, removals.get(c).sum());
    }
    return new LeaseCacheStats(
        hits.sum(),
        misses.sum(),
        loads.sum(),
        loadFailures.sum(),
        loadNanos.sum(),
        maxLoadNanos.get(),
        removed,
        background.closeFailures(),
        thrash.warnings(),
        thrash.recommendedCapacity(),
        entries.get(),
        leased,
        budget.held(),
        capacity,
        fdBudget);
  }

  @Override
  public LeaseCacheConfig.Sizing sizing() {
    return sizing;
  }

  @Override
  public String toString() {
    return config.name() + "{" + stats() + "}";
  }
}
