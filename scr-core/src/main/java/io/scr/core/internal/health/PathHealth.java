package io.scr.core.internal.health;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health of the DataNode behind one socket path: its {@link HealthState}, the deadline its
 * answers are held to, and how often it changed. Fed by {@link DataNodeHealth} with what requests
 * and probes see:
 *
 * <table>
 *   <caption>Transitions</caption>
 *   <tr><th>event</th><th>from</th><th>to</th></tr>
 *   <tr><td>an answer (any status) within the floor</td><td>any</td><td>HEALTHY</td></tr>
 *   <tr><td>an answer slower than the floor, within the deadline</td><td>HEALTHY</td>
 *       <td>SUSPECT</td></tr>
 *   <tr><td>a probe's answer (after the relapse hold, see {@link #probeAnswered}); on trial
 *       until a request is answered within the floor: the trial request is sent off the read
 *       path, one at a time, and readers send none meanwhile (see {@link #takeTrial})</td>
 *       <td>any</td><td>HEALTHY</td></tr>
 *   <tr><td>no answer within the deadline (a reader's request unanswered within the reader's
 *       shorter wait, {@link #readWaitNanos}, changes nothing: a check follows, see {@link
 *       #startCheck})</td><td>HEALTHY</td><td>SUSPECT</td></tr>
 *   <tr><td>no answer within the deadline</td><td>SUSPECT, DEAD</td><td>UNRESPONSIVE</td></tr>
 *   <tr><td>reset or EOF inside an exchange, a segment closed</td><td>HEALTHY</td>
 *       <td>SUSPECT</td></tr>
 *   <tr><td>no socket, connection refused, closed unanswered</td><td>any</td><td>DEAD</td></tr>
 * </table>
 *
 * <p>One WARN when the state becomes UNRESPONSIVE or DEAD, one INFO when it is HEALTHY again after
 * that (a SUSPECT that clears logs at DEBUG).
 *
 * <p>Concurrency: thread-safe. {@link #state()} and {@link #deadlineNanos()} are volatile reads
 * (every replica open reads them); events take this object's monitor, which guards the answer-time
 * window and the transition bookkeeping; logging happens after the monitor is released. The trial
 * is taken by a CAS ({@link #takeTrial}); the last open's request is a volatile field (a racing
 * write of another open's request is as good).
 */
public final class PathHealth {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodeHealth.class);

  /** Answer times kept for the percentile. */
  static final int WINDOW = 64;

  /** Answers needed before the deadline follows them (until then it is the floor). */
  static final int MIN_SAMPLES = 8;

  private final String path;
  private final HealthPolicy policy;
  private final Ticker ticker;

  /** Run (outside the monitor) when the state leaves HEALTHY: starts the probe. */
  private final Runnable onLeftHealthy;

  /** Run (outside the monitor) when the state returns to HEALTHY from UNRESPONSIVE or DEAD. */
  private final Runnable onRecovered;

  private volatile HealthState state = HealthState.HEALTHY;

  /** The deadline learned from normal answers. */
  private volatile long deadlineNanos;

  /**
   * Whether a request suspected the DataNode again right after a probe had made it healthy: then
   * its deadline is the floor until a request is answered within the floor.
   */
  private volatile boolean relapsing;

  @GuardedBy("this")
  private final long[] window = new long[WINDOW];

  @GuardedBy("this")
  private long answers;

  @GuardedBy("this")
  private long changedAtNanos;

  @GuardedBy("this")
  private String lastReason;

  /**
   * Whether the last return to HEALTHY was a probe's answer with no request answered in time since:
   * a request that times out then shows a DataNode that answers probes but not requests.
   */
  @GuardedBy("this")
  private boolean healedByProbeOnly;

  /**
   * How many times in a row the DataNode was suspected again by a request right after a probe had
   * made it healthy: each doubles how long it stays out before a probe's answer counts.
   */
  @GuardedBy("this")
  private int relapses;

  /** The longest a DataNode that relapses stays out before a probe's answer counts. */
  static final long MAX_RELAPSE_HOLD_NANOS = TimeUnit.SECONDS.toNanos(5);

  /** Transitions into each state, by ordinal. */
  private final AtomicLongArray entered = new AtomicLongArray(HealthState.values().length);

  private final LongAdder probes = new LongAdder();

  /** Whether the peer advertised the shim's PING (then probes use it). */
  private volatile boolean offersPing;

  /**
   * Whether the last return to HEALTHY was a probe's answer with no request answered within the
   * floor since: then no reader sends a request; one request at a time, the trial ({@link
   * #takeTrial}), is sent off the read path until one is answered within the floor. A probe proves
   * the process answers, not that it serves fd requests in time: a DataNode just restarted answers
   * its first fd requests only after hundreds of ms (a cold JVM), and a reader that sent one would
   * wait the whole deadline.
   */
  private volatile boolean onTrial;

  /** Whether a check after a reader's outwaited request runs ({@link #startCheck}). */
  private final java.util.concurrent.atomic.AtomicBoolean checking =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** Whether a trial request is queued or being sent ({@link #takeTrial}, {@link #trialEnded}). */
  private final java.util.concurrent.atomic.AtomicBoolean trial =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** When a read last asked about this path while it was not healthy (ticker time). */
  private volatile long askedAtNanos;

  /** Whether a probe of this path is scheduled or running ({@link DataNodeHealth}). */
  final java.util.concurrent.atomic.AtomicBoolean probing =
      new java.util.concurrent.atomic.AtomicBoolean();

  PathHealth(
      String path,
      HealthPolicy policy,
      Ticker ticker,
      Runnable onLeftHealthy,
      Runnable onRecovered) {
    this.path = path;
    this.policy = policy;
    this.ticker = ticker;
    this.onLeftHealthy = onLeftHealthy;
    this.onRecovered = onRecovered;
    this.deadlineNanos = policy.deadlineNanos(-1);
    synchronized (this) {
      this.changedAtNanos = ticker.read();
    }
  }

  /** The socket path. */
  public String path() {
    return path;
  }

  /** The state now. */
  public HealthState state() {
    return state;
  }

  /**
   * Whether a replica not open yet may be asked for here: healthy (see {@link
   * HealthState#admitsNewOpens}); when it is healthy on the word of a probe only, while no trial
   * request is queued or sent, so that an open goes on far enough to offer its request as the trial
   * ({@link #takeTrial}) instead of sending it. Takes nothing.
   */
  public boolean admitsNewOpen() {
    return state == HealthState.HEALTHY && !checking.get() && (!onTrial || !trial.get());
  }

  /**
   * Whether a request may be sent on the calling thread now: healthy, and not on the word of a
   * probe only.
   */
  public boolean admitsRequests() {
    return state == HealthState.HEALTHY && !onTrial && !checking.get();
  }

  /**
   * Takes the trial: true when the DataNode is healthy on the word of a probe only and no trial
   * request is queued or sent; the caller then has one request sent off the read path (its answer
   * or failure is fed here as any request's) and calls {@link #trialEnded} when it ends.
   */
  boolean takeTrial() {
    return onTrial() && trial.compareAndSet(false, true);
  }

  /** The trial request ended (whatever its outcome): the next one may be taken. */
  void trialEnded() {
    trial.set(false);
  }

  /** Whether the DataNode is healthy on the word of a probe only (readers send no requests). */
  public boolean onTrial() {
    return onTrial && state == HealthState.HEALTHY;
  }

  /**
   * Whether a reader choosing among DataNodes should prefer another: not healthy, or healthy on the
   * word of a probe only (its first requests may be slow: a DataNode just restarted).
   */
  public boolean unwell() {
    return state != HealthState.HEALTHY || onTrial || checking.get();
  }

  /** How long a request or probe waits for this DataNode's answer now (ns). */
  public long deadlineNanos() {
    return relapsing ? policy.floorNanos() : deadlineNanos;
  }

  /**
   * How long a reader's request waits for this DataNode's answer now (ns): the deadline, but no
   * more than the policy's read wait. A reader that waits this long unanswered reads another
   * replica and starts a check ({@link #startCheck}); whether the DataNode is unwell is left to a
   * wait of the whole deadline (the check's probe).
   */
  public long readWaitNanos() {
    return Math.min(deadlineNanos(), policy.readWaitNanos());
  }

  /** {@link #readWaitNanos} in whole milliseconds (at least 1), for socket timeouts. */
  public int readWaitMillis() {
    return (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(readWaitNanos()));
  }

  /** The deadline in whole milliseconds (at least 1), for socket timeouts. */
  public int deadlineMillis() {
    return (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos()));
  }

  /**
   * The DataNode answered a request after {@code latencyNanos}. An answer within the floor is a
   * normal one: a sample of its answer time, and healthy. An answer slower than the floor (it can
   * come once the deadline has been learned above the floor) is a slow one: it is used, but it is
   * no sample and makes the DataNode suspect like a wait of the whole deadline, so a DataNode that
   * turns slow neither teaches the deadline its slowness nor makes every open wait for it.
   */
  public void answered(long latencyNanos) {
    if (latencyNanos >= policy.floorNanos()) {
      suspectedByRequest("answered a request only after " + micros(latencyNanos) + " us");
      return;
    }
    synchronized (this) {
      window[(int) (answers % WINDOW)] = latencyNanos;
      answers++;
      if (answers >= MIN_SAMPLES && (answers % 8 == 0 || answers == MIN_SAMPLES)) {
        deadlineNanos = policy.deadlineNanos(p99());
      }
      healedByProbeOnly = false;
      relapses = 0;
      relapsing = false;
      onTrial = false;
      if (state == HealthState.HEALTHY) {
        return;
      }
    }
    recovered("answered a request in " + micros(latencyNanos) + " us");
  }

  /**
   * A request answered slower than the floor: suspect if healthy, and maybe a relapse. Its next
   * requests wait only the floor (until one is answered within it): the DataNode has just shown it
   * is slower than the deadline learned from its normal answers.
   */
  private void suspectedByRequest(String what) {
    synchronized (this) {
      if (state != HealthState.HEALTHY) {
        return; // an open that was in flight when the DataNode left healthy
      }
      relapse();
      relapsing = true;
      enter(HealthState.SUSPECT, what);
    }
    changed(HealthState.SUSPECT, what);
  }

  @GuardedBy("this")
  private void relapse() {
    relapses = healedByProbeOnly ? relapses + 1 : 0;
    relapsing = relapses > 0;
    healedByProbeOnly = false;
  }

  /**
   * The DataNode answered a probe: healthy, without a sample (a probe is cheaper than an fd
   * request, and would pull the deadline below what requests need). A DataNode that a request
   * suspected again right after a probe had made it healthy (it answers probes, not requests in
   * time: slow, not hung) stays out for {@code probe interval x 2^relapses} (at most {@value
   * #MAX_RELAPSE_HOLD_NANOS} ns) before a probe's answer counts, so it is tried by one open per
   * hold instead of one per probe interval.
   */
  void probeAnswered() {
    if (state == HealthState.HEALTHY) {
      return;
    }
    synchronized (this) {
      if (relapses > 0 && ticker.read() - changedAtNanos < relapseHoldNanos()) {
        return;
      }
    }
    recovered("answered a probe", true);
  }

  @GuardedBy("this")
  private long relapseHoldNanos() {
    long interval = policy.probeIntervalNanos();
    int shift = Math.min(relapses, 30);
    return interval > MAX_RELAPSE_HOLD_NANOS >> shift ? MAX_RELAPSE_HOLD_NANOS : interval << shift;
  }

  private void recovered(String why) {
    recovered(why, false);
  }

  private void recovered(String why, boolean byProbe) {
    HealthState from;
    long heldNanos;
    synchronized (this) {
      from = state;
      if (from == HealthState.HEALTHY) {
        return;
      }
      heldNanos = enter(HealthState.HEALTHY, why);
      healedByProbeOnly = byProbe;
      onTrial = byProbe;
    }
    if (from == HealthState.SUSPECT) {
      LOG.debug("DataNode at {} {}; healthy again", path, why);
      return;
    }
    LOG.info(
        "DataNode at {} {} after {} ms {}: new replicas are opened there again",
        path,
        why,
        TimeUnit.NANOSECONDS.toMillis(heldNanos),
        from.name().toLowerCase(java.util.Locale.ROOT));
    onRecovered.run();
  }

  /** A request or probe waited its whole deadline for an answer. */
  public void timedOut(String what) {
    HealthState to;
    synchronized (this) {
      HealthState from = state;
      to = from == HealthState.HEALTHY ? HealthState.SUSPECT : HealthState.UNRESPONSIVE;
      if (from == HealthState.HEALTHY) {
        relapse();
        // It has just shown it is slower than its deadline: its next opens wait only the floor.
        relapsing = true;
      }
      if (from == to) {
        lastReason = what;
        return;
      }
      enter(to, what);
    }
    changed(to, what);
  }

  /**
   * Starts a check of a healthy DataNode that a reader's request outwaited ({@link #readWaitNanos},
   * shorter than the deadline): true when no check runs already. While it runs, no replica not open
   * yet is asked for here (readers go to other replicas), but the state does not change: a DataNode
   * that answers the check is busy, not unwell ({@link #checkAnswered}); one that lets it wait the
   * whole deadline unanswered is suspect like a request that did.
   */
  boolean startCheck() {
    return state == HealthState.HEALTHY && checking.compareAndSet(false, true);
  }

  /**
   * The check's probe was answered: still healthy, and on trial (no reader sends a request until
   * one sent off the read path is answered within the floor, as after a probe's answer), unless the
   * state changed meanwhile.
   */
  void checkAnswered() {
    synchronized (this) {
      if (state == HealthState.HEALTHY) {
        onTrial = true;
      }
    }
  }

  /** The check ended, whatever its outcome. */
  void checkEnded() {
    checking.set(false);
  }

  /** The connection was reset or closed inside an exchange, or the DataNode closed a segment. */
  public void faltered(String what) {
    synchronized (this) {
      if (state != HealthState.HEALTHY) {
        return;
      }
      enter(HealthState.SUSPECT, what);
    }
    changed(HealthState.SUSPECT, what);
  }

  /** Nobody listens at the path: no socket file, connection refused, or closed unanswered. */
  public void refused(String what) {
    synchronized (this) {
      if (state == HealthState.DEAD) {
        lastReason = what;
        return;
      }
      enter(HealthState.DEAD, what);
      // Whatever answers at this path next is a new process (a restarted DataNode, still warming
      // up): its deadline is learned again from the floor, not from the one that died.
      answers = 0;
      deadlineNanos = policy.deadlineNanos(-1);
    }
    changed(HealthState.DEAD, what);
  }

  /** Whether probes use the shim's PING (the peer advertised it) rather than a stock op. */
  boolean offersPing() {
    return offersPing;
  }

  void offersPing(boolean yes) {
    offersPing = yes;
  }

  /** The policy this path's deadline and probes follow. */
  HealthPolicy policy() {
    return policy;
  }

  /**
   * The fd request of the last open asked for here: sent as the trial as soon as a probe finds the
   * DataNode answering again, so the trial needs no reader to come.
   */
  private volatile DataNodeHealth.TrialRequest lastRequest;

  void lastRequest(DataNodeHealth.TrialRequest request) {
    lastRequest = request;
  }

  DataNodeHealth.TrialRequest lastRequest() {
    return lastRequest;
  }

  /** Forgets {@code request} if it is still the last one (it can no longer be sent). */
  void forgetRequest(DataNodeHealth.TrialRequest request) {
    if (lastRequest == request) {
      lastRequest = null;
    }
  }

  void askedAt(long nanos) {
    askedAtNanos = nanos;
  }

  long askedAtNanos() {
    return askedAtNanos;
  }

  /** Counts one probe sent (or waited on) for this path. */
  void probed() {
    probes.increment();
  }

  @GuardedBy("this")
  private long enter(HealthState to, String why) {
    long now = ticker.read();
    long held = now - changedAtNanos;
    state = to;
    changedAtNanos = now;
    askedAtNanos = now; // the request that saw the change asked
    lastReason = why;
    entered.incrementAndGet(to.ordinal());
    return held;
  }

  private void changed(HealthState to, String why) {
    switch (to) {
      case UNRESPONSIVE:
        LOG.warn(
            "DataNode at {} does not answer within {} ms ({}): replicas not open yet are read"
                + " from other DataNodes, open ones keep reading short-circuit; probing it every"
                + " {} ms",
            path,
            deadlineMillis(),
            why,
            TimeUnit.NANOSECONDS.toMillis(policy.probeIntervalNanos()));
        break;
      case DEAD:
        LOG.warn(
            "DataNode at {} is not running ({}): replicas not open yet are read from other"
                + " DataNodes; probing it every {} ms",
            path,
            why,
            TimeUnit.NANOSECONDS.toMillis(policy.probeIntervalNanos()));
        break;
      default:
        LOG.debug("DataNode at {} is suspect: {}", path, why);
        break;
    }
    onLeftHealthy.run();
  }

  @GuardedBy("this")
  private long p99() {
    int n = (int) Math.min(answers, WINDOW);
    long[] sorted = Arrays.copyOf(window, n);
    Arrays.sort(sorted);
    int index = (int) Math.ceil(n * 0.99) - 1;
    return sorted[Math.max(0, index)];
  }

  private static long micros(long nanos) {
    return TimeUnit.NANOSECONDS.toMicros(nanos);
  }

  /** A snapshot for metrics, the summary line and {@code scr doctor}. */
  public HealthStatus status() {
    Map<HealthState, Long> counts = new EnumMap<>(HealthState.class);
    for (HealthState s : HealthState.values()) {
      counts.put(s, entered.get(s.ordinal()));
    }
    synchronized (this) {
      return new HealthStatus(
          path,
          state,
          ticker.read() - changedAtNanos,
          deadlineNanos(),
          counts,
          probes.sum(),
          lastReason);
    }
  }
}
