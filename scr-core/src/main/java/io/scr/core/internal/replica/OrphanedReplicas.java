package io.scr.core.internal.replica;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.stats.ClientCounters;
import io.scr.shm.ShmId;
import io.scr.shm.Slot;
import io.scr.shm.internal.FailureLog;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Open replicas that outlive their DataNode process: the engine's rule for telling "the DataNode
 * went away" from "the DataNode invalidated this replica" when a shared-memory segment's connection
 * closes, and the background re-validation of the orphaned replicas once a DataNode is back on
 * their socket.
 *
 * <p><b>Orphaning</b> ({@link #segmentLost}, on the segment watcher's thread, before the slot pool
 * clears VALID on the dead segment). Of the open replicas whose slots are in that segment:
 *
 * <ul>
 *   <li>a slot still VALID was not invalidated: the DataNode died without touching the segment
 *       (kill -9, or SIGTERM, whose exit neither a stock DataNode nor the scr shim turns into a
 *       shutdown) or closed it while alive. The replica is orphaned;
 *   <li>when no slot of the segment is VALID any more, the DataNode tore the whole segment down as
 *       it closed it: a clean shutdown (stock {@code DataNode.shutdown()} ends with {@code
 *       ShortCircuitRegistry.shutdown()}, which invalidates every registered slot of every segment
 *       and then closes its connection; the shim's {@code stop()} does the same per connection).
 *       Every replica is orphaned;
 *   <li>otherwise a replica whose slot is invalid while others of its segment are still VALID was
 *       invalidated on its own (deleted, moved, replaced, or its generation stamp changed) and is
 *       not orphaned: it goes stale as before.
 * </ul>
 *
 * <p>An orphaned replica keeps reading from its fds, with checksums verified (its slot is invalid,
 * so it cannot be anchored), for at most the stale threshold of a replica without a slot ({@code
 * scr.replica.stale.threshold.ms}) unless a DataNode vouches for it again first.
 *
 * <p><b>Re-validation</b>: a daemon thread ({@code scr-orphans-<engine>}), running only while there
 * are orphans, asks each orphan's DataNode every {@value #TICK_MILLIS} ms (doubling to {@value
 * #MAX_PAUSE_MILLIS} ms while it is not answering) for the same block and generation stamp with a
 * new slot (op 87; {@link DataNodeEndpoint#revalidate}) and compares the identity (device and
 * inode) of the files it passes with the ones held. The same files: the replica adopts the new slot
 * and is an ordinary replica again, cache entry and leases untouched. Different files, or a refusal
 * for a replica the DataNode does not hold (gone, or another generation stamp): the replica is
 * dropped (invalid; the cache retires it and the next read opens it anew). Anything else (no
 * DataNode yet, one not ready, one without the block keys yet) is tried again.
 *
 * <p><b>Logging</b>: one INFO line when a DataNode's replicas are first orphaned (the first pass
 * after its segments closed, so a DataNode with several segments is one line) and one when the last
 * of them is re-validated, dropped or aged out; never a line per replica.
 *
 * <p>Concurrency: thread-safe. {@link #segmentLost} runs on the watcher thread; each path's {@link
 * Outage} is guarded by its own monitor; {@code lock} guards the thread's life and {@code closed}.
 * The orphan state itself lives in each {@link Replica} (volatile, see there).
 */
final class OrphanedReplicas implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OrphanedReplicas.class);

  /** How often orphans' DataNodes are asked while they answer. */
  static final long TICK_MILLIS = 100;

  /** How long after a DataNode's first segment closed its orphans are first looked at. */
  static final long GATHER_MILLIS = 20;

  /** The longest pause between two attempts on a DataNode that is not answering. */
  static final long MAX_PAUSE_MILLIS = 1000;

  /** What a re-validation found. */
  enum Revalidation {
    /** The same files, a new slot adopted. */
    REVALIDATED,
    /** The DataNode passed other files for the block (moved or replaced). */
    CHANGED,
    /** The DataNode holds no such replica (deleted, or another generation stamp). */
    GONE,
    /** No answer that decides (no DataNode yet, not ready, no slot yet): try again. */
    NOT_YET
  }

  private final String name;
  private final boolean enabled;
  private final Ticker ticker;
  private final ClientCounters counters;
  private final ThreadFactory threadFactory;
  private final long staleAfterNanos;
  private final ConcurrentHashMap<DataNodeEndpoint, Outage> outages = new ConcurrentHashMap<>();

  private final Object lock = new Object();

  @GuardedBy("lock")
  private Thread thread;

  @GuardedBy("lock")
  private boolean closed;

  /** Whether the thread has been asked to look again before it parks. */
  private volatile boolean wake;

  OrphanedReplicas(
      String name,
      boolean enabled,
      Ticker ticker,
      ClientCounters counters,
      long staleAfterNanos,
      ThreadFactory threadFactory) {
    this.staleAfterNanos = staleAfterNanos;
    this.name = name;
    this.enabled = enabled;
    this.ticker = ticker;
    this.counters = counters;
    this.threadFactory = threadFactory;
  }

  /** Whether open replicas may outlive their DataNode ({@code scr.replica.outlive.datanode}). */
  boolean enabled() {
    return enabled;
  }

  /**
   * The DataNode at {@code endpoint} closed segment {@code id}'s connection (watcher thread, before
   * the pool invalidates the segment): orphans the open replicas on it that were not invalidated
   * one by one (see the class comment).
   */
  void segmentLost(DataNodeEndpoint endpoint, ShmId id) {
    if (!enabled) {
      return;
    }
    List<Replica> onSegment = new ArrayList<>();
    boolean anyValid = false;
    for (Replica r : endpoint.heldReplicas()) {
      Slot s = r.slot();
      if (s != null && !r.isOrphaned() && s.segment().id().equals(id)) {
        onSegment.add(r);
        anyValid |= s.isValid();
      }
    }
    if (onSegment.isEmpty()) {
      return;
    }
    long now = ticker.read();
    int orphaned = 0;
    int invalidated = 0;
    for (Replica r : onSegment) {
      // Torn down as a whole (no slot VALID): every replica; else only those still VALID.
      if (!anyValid || r.slot().isValid()) {
        if (r.orphan(now)) {
          orphaned++;
        }
      } else {
        invalidated++;
      }
    }
    if (orphaned == 0) {
      return;
    }
    counters.recordOrphaned(orphaned);
    Outage o = outages.computeIfAbsent(endpoint, e -> new Outage(now));
    synchronized (o) {
      o.orphaned += orphaned;
      o.invalidated += invalidated;
    }
    startOrWake();
  }

  /**
   * {@code replica}'s slot was found invalid before its segment was reported closed, and its
   * DataNode no longer answers on the socket: the teardown of a clean shutdown seen from the
   * reader's side first. Orphans it (as {@link #segmentLost} would a moment later).
   *
   * @return whether the replica is orphaned now
   */
  boolean orphanOne(DataNodeEndpoint endpoint, Replica replica) {
    if (!enabled) {
      return false;
    }
    long now = ticker.read();
    if (!replica.orphan(now)) {
      return replica.isOrphaned();
    }
    counters.recordOrphaned(1);
    Outage o = outages.computeIfAbsent(endpoint, e -> new Outage(now));
    synchronized (o) {
      o.orphaned++;
    }
    startOrWake();
    return true;
  }

  /** The DataNode of {@code endpoint} answers again: its orphans are asked about at once. */
  void dataNodeAnswers(DataNodeEndpoint endpoint) {
    Outage o = outages.get(endpoint);
    if (o == null) {
      return;
    }
    synchronized (o) {
      o.pauseNanos = 0;
      o.nextAttemptNanos = ticker.read();
    }
    startOrWake();
  }

  private void startOrWake() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      wake = true;
      if (thread == null) {
        thread = threadFactory.newThread(this::run);
        thread.start();
      } else {
        LockSupport.unpark(thread);
      }
    }
  }

  private void run() {
    FailureLog failures = new FailureLog();
    long pause = TimeUnit.MILLISECONDS.toNanos(TICK_MILLIS);
    while (true) {
      synchronized (lock) {
        if (closed || (outages.isEmpty() && !wake)) {
          if (thread == Thread.currentThread()) {
            thread = null;
          }
          return;
        }
        wake = false;
      }
      try {
        pass();
        failures.succeeded(LOG, "orphaned replica re-validation");
      } catch (RuntimeException | Error e) {
        // The thread must go on: without it no orphan is ever re-validated or given up.
        failures.failed(
            LOG,
            "orphaned replica re-validation",
            e,
            System.nanoTime(),
            TimeUnit.MILLISECONDS.toNanos(MAX_PAUSE_MILLIS));
      }
      if (!wake) {
        LockSupport.parkNanos(this, pause);
      }
      if (Thread.interrupted()) {
        synchronized (lock) {
          if (closed) {
            thread = null;
            return;
          }
        }
      }
    }
  }

  /** One pass over every DataNode with orphans. */
  private void pass() {
    for (java.util.Map.Entry<DataNodeEndpoint, Outage> e : outages.entrySet()) {
      DataNodeEndpoint endpoint = e.getKey();
      Outage o = e.getValue();
      long now = ticker.read();
      synchronized (o) {
        if (now - o.nextAttemptNanos < 0) {
          continue;
        }
        if (!o.announced) {
          o.announced = true;
          LOG.info(
              "DataNode at {} went away (its shared memory closed): {} open replicas keep"
                  + " reading short-circuit from their fds, checksums verified, until a DataNode"
                  + " on that socket vouches for them again (at most {} ms){}",
              endpoint.path(),
              o.orphaned,
              TimeUnit.NANOSECONDS.toMillis(staleAfterNanos),
              o.invalidated == 0
                  ? ""
                  : "; " + o.invalidated + " it had invalidated are not read any more");
        }
      }
      boolean answered = revalidate(endpoint, o, now);
      synchronized (o) {
        if (answered) {
          o.pauseNanos = 0;
          o.nextAttemptNanos = now;
        } else {
          long tick = TimeUnit.MILLISECONDS.toNanos(TICK_MILLIS);
          o.pauseNanos =
              Math.min(
                  TimeUnit.MILLISECONDS.toNanos(MAX_PAUSE_MILLIS),
                  o.pauseNanos == 0 ? tick : o.pauseNanos * 2);
          o.nextAttemptNanos = now + o.pauseNanos;
        }
      }
      if (!hasOrphans(endpoint)) {
        finish(endpoint, o);
      }
    }
  }

  /**
   * Asks the DataNode about each orphan of {@code endpoint} until one answer does not decide;
   * returns whether every orphan asked got a deciding answer.
   */
  private boolean revalidate(DataNodeEndpoint endpoint, Outage o, long now) {
    for (Replica r : endpoint.heldReplicas()) {
      if (!r.isOrphaned()) {
        continue;
      }
      if (r.orphanExpired(now)) {
        r.dropOrphan();
        counters.recordOrphanDropped();
        synchronized (o) {
          o.expired++;
        }
        continue;
      }
      Revalidation v = endpoint.revalidate(r);
      if (v == Revalidation.NOT_YET) {
        return false;
      }
      if (v == Revalidation.REVALIDATED) {
        counters.recordRevalidated();
      } else {
        r.dropOrphan();
        counters.recordOrphanDropped();
      }
      synchronized (o) {
        switch (v) {
          case REVALIDATED:
            o.revalidated++;
            break;
          case CHANGED:
            o.changed++;
            break;
          default:
            o.gone++;
            break;
        }
      }
    }
    return true;
  }

  private static boolean hasOrphans(DataNodeEndpoint endpoint) {
    for (Replica r : endpoint.heldReplicas()) {
      if (r.isOrphaned()) {
        return true;
      }
    }
    return false;
  }

  /** The last orphan of {@code endpoint} is settled: one line, and the outage is over. */
  private void finish(DataNodeEndpoint endpoint, Outage o) {
    if (!outages.remove(endpoint, o)) {
      return;
    }
    synchronized (o) {
      long ms = TimeUnit.NANOSECONDS.toMillis(ticker.read() - o.startNanos);
      int settled = o.revalidated + o.changed + o.gone + o.expired;
      int closed = Math.max(0, o.orphaned - settled);
      if (o.revalidated > 0) {
        LOG.info(
            "DataNode at {} is back after {} ms: {} orphaned replicas re-validated (same files, new"
                + " slot), {} dropped (files changed {}, replica gone {}, aged out {}), {} closed"
                + " meanwhile",
            endpoint.path(),
            ms,
            o.revalidated,
            o.changed + o.gone + o.expired,
            o.changed,
            o.gone,
            o.expired,
            closed);
      } else {
        LOG.info(
            "DataNode at {}: none of its {} orphaned replicas is read any more after {} ms ({}"
                + " changed, {} gone, {} aged out, {} closed)",
            endpoint.path(),
            o.orphaned,
            ms,
            o.changed,
            o.gone,
            o.expired,
            closed);
      }
    }
  }

  /** Replicas of DataNodes that are away now (a gauge). */
  int orphanCount(Iterable<DataNodeEndpoint> endpoints) {
    int n = 0;
    for (DataNodeEndpoint e : endpoints) {
      for (Replica r : e.heldReplicas()) {
        if (r.isOrphaned()) {
          n++;
        }
      }
    }
    return n;
  }

  /**
   * Stops the thread and waits for it; idempotent. Orphans stay as they are (the engine closes).
   */
  @Override
  public void close() {
    Thread t;
    synchronized (lock) {
      closed = true;
      t = thread;
    }
    if (t != null) {
      t.interrupt();
      try {
        t.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String toString() {
    return "OrphanedReplicas{" + name + ", " + outages.size() + " DataNode(s) away}";
  }

  /** One DataNode's outage as this engine saw it: counts for its two log lines, and the pacing. */
  private static final class Outage {
    final long startNanos;

    @GuardedBy("this")
    int orphaned;

    @GuardedBy("this")
    int invalidated;

    @GuardedBy("this")
    int revalidated;

    @GuardedBy("this")
    int changed;

    @GuardedBy("this")
    int gone;

    @GuardedBy("this")
    int expired;

    @GuardedBy("this")
    boolean announced;

    @GuardedBy("this")
    long pauseNanos;

    @GuardedBy("this")
    long nextAttemptNanos;

    Outage(long startNanos) {
      this.startNanos = startNanos;
      synchronized (this) {
        // The first look waits a moment: a DataNode's other segments close at the same time, and
        // its one line should count them all.
        this.nextAttemptNanos = startNanos + TimeUnit.MILLISECONDS.toNanos(GATHER_MILLIS);
      }
    }
  }
}
