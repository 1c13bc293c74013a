package io.scr.cache;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LeaseCache} implementation: a {@link ConcurrentHashMap} of {@link Node}s, lock stripes
 * that keep per-stripe access lists for eviction, and background work (closing, maintenance) run by
 * a {@link Scheduler}: by default one thread of the cache's own.
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
 *       release that makes an entry idle while the cache is <em>over</em> capacity (leases pinned
 *       entries past it) evicts on the releasing thread ({@code becameIdle → evictForSize}), taking
 *       stripe locks with a blocking {@code lock()}, as a load does: eviction waits for the lock
 *       rather than leave the cache over capacity. LRU order and idle times have the resolution of
 *       the clock tick: the maintenance interval, or the time between loads if those are more
 *       frequent.
 *   <li><b>Stripe locks</b> ({@link Stripe#lock}) own each stripe's access list. They are taken to
 *       link a loaded entry, to replay the buffer, to pick and retire eviction victims and to sweep
 *       for expiry. Map removals, counters and close scheduling happen after unlocking. No loader,
 *       value {@code close()}, invalidation predicate or scheduler call ever runs under a stripe
 *       lock; the one value method that does is {@link CachedValue#isValid()}, asked by the
 *       maintenance sweep (see {@link Stripe}).
 *   <li><b>Loads</b> run on the leasing thread with no lock held. The loading node sits in the map
 *       so concurrent leases of the key wait on its future: the loader is called once.
 *   <li><b>Closing</b> happens in a task on the {@link Scheduler} (the first retired value queued
 *       while none is pending submits one; {@link #drainScheduled}), which also runs periodic
 *       maintenance. Two exceptions: a load whose value the fd budget refuses closes it on the
 *       loading thread (it was never published), and once {@link #close()} has begun, the thread
 *       that retires a value or returns its last lease closes it. {@code close()} stops the cache's
 *       own thread, waiting up to 30 s for a close in progress, then closes what is still queued;
 *       with an injected scheduler it does not wait for a task already running there.
 *   <li><b>Time</b> comes only from the {@link Ticker}: idle stamps, expiry, load times, the fd
 *       budget's wait and failure-log intervals. The scheduler decides only when tasks run.
 *   <li><b>fd budget</b>: {@link #fdsHeld} counts the fds of values not yet closed plus the
 *       reservations of loads in progress, and never exceeds the budget: a load reserves {@code
 *       typicalFdCost} before calling the loader, evicting idle entries and waiting for the closer
 *       if needed. A value that reports more fds than reserved reserves the difference after
 *       loading, the same way, and is closed and refused if it cannot. A load short of budget waits
 *       on {@link #budgetMonitor} (which guards nothing but that wait; {@link #budgetWaiters} is
 *       written under it and read without it, so a closer skips the monitor when nobody waits).
 *   <li><b>Benign races:</b> the entry count can pass capacity while leases pin entries, or briefly
 *       while two threads evict; lost buffer records leave LRU order approximate; {@link #stats()}
 *       reads counters one by one.
 * </ul>
 */
final class StripedLeaseCache<K, V extends CachedValue>
    implements LeaseCache<K, V>, ReusableLease.NodeReleaser {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseCache.class);

  /** Background failures of a streak are logged at most this often after the first. */
  private static final long FAILURE_LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

  /** How long {@link #close()} waits for the cache's own thread to finish a close in progress. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

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

  /** Fds of unclosed values plus reservations of loads in progress. */
  private final AtomicLong fdsHeld = new AtomicLong();

  /** Fds of values queued for the closer: what a load short of budget may wait for. */
  private final AtomicLong fdsClosing = new AtomicLong();

  /**
   * The ticker's time as of the last maintenance run or load: what a release stamps as its idle
   * time. Reading the ticker on every release would put a {@code System.nanoTime()} (25 ns to over
   * 100 ns, depending on the clock source and virtualisation) on the hit path; idle times are
   * instead as coarse as the maintenance interval. Written racily by several threads; a stamp that
   * is slightly old only makes an entry expire slightly early.
   */
  private volatile long clock;

  private final Object budgetMonitor = new Object();
  private volatile int budgetWaiters;

  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder loads = new LongAdder();
  private final LongAdder loadFailures = new LongAdder();
  private final LongAdder loadNanos = new LongAdder();
  private final AtomicLong maxLoadNanos = new AtomicLong();
  private final LongAdder youngSizeEvictions = new LongAdder();
  private final LongAdder closeFailures = new LongAdder();
  private final EnumMap<RemovalCause, LongAdder> removals = new EnumMap<>(RemovalCause.class);

  private final ThrashDetector thrash;

  /** Retired, unleased nodes whose values await closing. */
  private final ConcurrentLinkedQueue<Node<K, V>> closeQueue = new ConcurrentLinkedQueue<>();

  private final Scheduler scheduler;

  /** The cache's own thread when no scheduler was injected (stopped by close), else null. */
  private final CloserThread ownThread;

  /**
   * A drain task is submitted and has not started draining: a close queued now will be seen by it.
   * The task clears this before it polls, so a node queued after the clear submits another task.
   */
  private final AtomicBoolean drainScheduled = new AtomicBoolean();

  /** The next maintenance run (cancelled by close). */
  private volatile Future<?> nextMaintenance;

  private final BackgroundFailures failures = new BackgroundFailures();

  /** False once {@link #close()} has begun: closes then run on the thread that makes them due. */
  private volatile boolean closerRunning = true;

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
    this.ownThread =
        config.scheduler().isPresent() ? null : new CloserThread(config.name() + "-closer");
    this.scheduler = config.scheduler().orElse(ownThread);
    scheduleMaintenance();
  }

  // ---------------------------------------------------------------------------------------------
  // Leasing

  @Override
  public Lease<V> lease(K key, ValueLoader<? super K, ? extends V> loader) throws IOException {
    // Kept small so it inlines into the caller and the lease can be scalar-replaced.
    Node<K, V> n = acquireIfPresent(key);
    return new NodeLease(n != null ? n : leaseSlow(key, loader));
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
      reserveFds(reserved, fresh.stripe.index, key);
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
      unreserve(reserved);
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
        reserveFds(cost - reserved, fresh.stripe.index, key);
      } else if (cost < reserved) {
        unreserve(reserved - cost);
      }
    } catch (IOException | RuntimeException e) {
      unreserve(reserved);
      fresh.fdCost = 0;
      failLoad(fresh, e);
      // Never published, leased or counted: closed here, outside every lock, rather than queued
      // for the closer, whose accounting would briefly count fds the budget refused.
      closeQuietly(v, key);
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
      scheduleClose(n);
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

  /** A lease on one node. Confined to the leasing thread; close is idempotent. */
  private final class NodeLease implements Lease<V> {
    private Node<K, V> node;

    NodeLease(Node<K, V> node) {
      this.node = node;
    }

    @Override
    public V value() {
      Node<K, V> n = node;
      if (n == null) {
        throw new IllegalStateException("lease already closed");
      }
      return n.value;
    }

    @Override
    public void close() {
      Node<K, V> n = node;
      if (n != null) {
        node = null;
        release(n);
      }
    }

    @Override
    public String toString() {
      Node<K, V> n = node;
      return n == null ? "Lease{closed}" : "Lease{" + n.key + "}";
    }
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
      scheduleClose(n);
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
        scheduleClose(victim);
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // fd budget

  private void reserveFds(int amount, int home, K key) throws IOException {
    long deadline = 0;
    boolean waited = false;
    for (; ; ) {
      long held = fdsHeld.get();
      if (held + amount <= fdBudget) {
        if (fdsHeld.compareAndSet(held, held + amount)) {
          return;
        }
        continue;
      }
      boolean evicted = evictOne(home, RemovalCause.FD_BUDGET);
      if (!evicted && fdsClosing.get() == 0) {
        throw budgetExhausted(key, amount);
      }
      long now = ticker.read();
      if (!waited) {
        waited = true;
        deadline = now + config.fdBudgetWait().toNanos();
      } else if (now - deadline >= 0) {
        throw budgetExhausted(key, amount);
      }
      awaitFdsFreed(Math.min(deadline - now, TimeUnit.MILLISECONDS.toNanos(10)), amount, key);
    }
  }

  private void awaitFdsFreed(long nanos, int amount, K key) throws InterruptedIOException {
    synchronized (budgetMonitor) {
      budgetWaiters++;
      try {
        if (fdsHeld.get() + amount > fdBudget && fdsClosing.get() > 0 && nanos > 0) {
          TimeUnit.NANOSECONDS.timedWait(budgetMonitor, nanos);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        InterruptedIOException ie =
            new InterruptedIOException("interrupted waiting for fd budget to load " + key);
        ie.initCause(e);
        throw ie;
      } finally {
        budgetWaiters--;
      }
    }
  }

  private FdBudgetExhaustedException budgetExhausted(K key, int amount) {
    return new FdBudgetExhaustedException(
        String.format(
            "%s: no room for %d more fds to load %s: %d of the fd budget %d are held and every"
                + " cached value is leased; raise the fd budget or the process fd limit",
            config.name(), amount, key, fdsHeld.get(), fdBudget),
        null);
  }

  private void unreserve(long amount) {
    fdsHeld.addAndGet(-amount);
    signalBudgetWaiters();
  }

  private void signalBudgetWaiters() {
    if (budgetWaiters > 0) {
      synchronized (budgetMonitor) {
        budgetMonitor.notifyAll();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Closing

  /** Hands a retired, unleased node's value to the closer. Called once per value, no lock held. */
  private void scheduleClose(Node<K, V> n) {
    fdsClosing.addAndGet(n.fdCost);
    closeQueue.add(n);
    if (!closerRunning) {
      drainCloseQueue(); // the cache is closing: close on this (lock-free) thread
    } else if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
      try {
        scheduler.execute(this::runDrain);
      } catch (RejectedExecutionException e) {
        drainScheduled.set(false);
        if (!closed) { // after close began, the cache's own thread refuses tasks: expected
          LOG.warn("{}: the scheduler refused a close task; closing on this thread", config.name());
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
      fdsClosing.addAndGet(-n.fdCost);
      fdsHeld.addAndGet(-n.fdCost);
      signalBudgetWaiters();
    }
  }

  private void closeQuietly(V v, K key) {
    try {
      v.close();
    } catch (IOException | RuntimeException e) {
      closeFailures.increment();
      LOG.warn("{}: closing the value for {} failed", config.name(), key, e);
    }
  }

  private void scheduleMaintenance() {
    if (closed) {
      return;
    }
    try {
      nextMaintenance = scheduler.schedule(this::runMaintenance, config.maintenanceInterval());
    } catch (RejectedExecutionException e) {
      if (!closed) { // after close began, the cache's own thread refuses tasks: expected
        LOG.warn(
            "{}: the scheduler refused the maintenance task; maintenance stops", config.name());
      }
    }
  }

  /**
   * The maintenance task: one {@link #cleanUp()}, then the next one an interval later. A failure
   * (an {@code Error} from a value's {@code isValid}, say) is logged and the next run still
   * scheduled.
   */
  private void runMaintenance() {
    if (closed) {
      return;
    }
    try {
      cleanUp();
      failures.succeeded();
    } catch (RuntimeException | Error e) {
      failures.failed(e);
    } finally {
      scheduleMaintenance();
    }
  }

  /**
   * Failures of background tasks: logged with the stack trace at the first of a streak, then at
   * most once a minute as one line; the tasks keep running either way (a closer that died on an
   * {@code Error} would leave every later close to the readers' threads). Synchronized: an injected
   * scheduler may run tasks on several threads.
   */
  private final class BackgroundFailures {
    private long inARow;
    private long lastLoggedNanos;
    private long notLogged;

    synchronized void failed(Throwable e) {
      long now = ticker.read();
      if (inARow++ == 0) {
        LOG.error(
            "{}: closer failed; it keeps running (repeats are logged once a minute)",
            config.name(),
            e);
        lastLoggedNanos = now;
      } else if (now - lastLoggedNanos >= FAILURE_LOG_INTERVAL_NANOS) {
        LOG.error(
            "{}: closer failed again: {} in a row, {} not logged; latest: {}",
            config.name(),
            inARow,
            notLogged,
            e.toString());
        lastLoggedNanos = now;
        notLogged = 0;
      } else {
        notLogged++;
      }
    }

    synchronized void succeeded() {
      if (inARow > 0) {
        LOG.info("{}: closer works again after {} failures", config.name(), inARow);
        inARow = 0;
        notLogged = 0;
      }
    }
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
    closerRunning = false;
    Future<?> maintenance = nextMaintenance;
    if (maintenance != null) {
      maintenance.cancel(/* mayInterruptIfRunning= */ false);
    }
    boolean interrupted = false;
    if (ownThread != null) {
      try {
        if (!ownThread.stop(STOP_TIMEOUT)) {
          LOG.warn("{}: closer thread did not stop within 30 s", config.name());
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
        scheduleClose(n);
      }
      for (Node<K, V> n : stale) {
        finishRemoval(n, RemovalCause.STALE, true);
        scheduleClose(n);
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
        closeFailures.sum(),
        thrash.warnings(),
        thrash.recommendedCapacity(),
        entries.get(),
        leased,
        fdsHeld.get(),
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
