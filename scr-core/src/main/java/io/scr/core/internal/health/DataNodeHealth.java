package io.scr.core.internal.health;

import io.scr.cache.Ticker;
import io.scr.core.internal.net.DomainConnectException;
import io.scr.core.internal.net.LivenessProbe;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.internal.protocol.ProtocolException;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedByInterruptException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The health of every DataNode socket this process talks to, one {@link PathHealth} per path,
 * shared by every scr engine (client context) of the process: what one stream learns about a hung
 * or dead DataNode, every stream of every file system knows at once ({@link #shared}).
 *
 * <p><b>What feeds it.</b> Replica opens report how long the DataNode took to answer ({@link
 * #answered}) or how the request failed ({@link #requestFailed}): a wait of the reader's bound
 * ({@link #deadlineMillis}: the deadline, but no more than {@code
 * scr.client.health.read.wait.max.ms}), which makes the path suspect, or of the whole deadline, a
 * refused or missing socket, a connection reset inside an exchange. So a hung DataNode costs a
 * first read the reader's bound, while only a wait of the whole deadline (a probe's, the trial's)
 * judges it unresponsive. The segment watcher reports a segment the DataNode closed ({@link
 * #faltered}). While a path is not healthy, a probe ({@link LivenessProbe}: the shim's PING, or a
 * stock op a DataNode answers without work) runs every {@code scr.client.health.probe.interval.ms}
 * on the injected {@link ProbeScheduler}; its answer makes the path healthy again. No probe runs
 * while every path is healthy, nor for a path no read asked about for {@value
 * #PROBE_WHILE_ASKED_SECONDS} s ({@value #PROBE_WHILE_DEAD_SECONDS} s while it is dead; the next
 * read that asks starts it again).
 *
 * <p><b>What reads it.</b> A replica open on a path that is suspect, unresponsive or dead is not
 * attempted (the read goes the stock way, counted as {@code DATANODE_UNHEALTHY}); {@code
 * ScrFileSystem} streams also steer their stock reads to another replica; replicas already open
 * keep reading.
 *
 * <p><b>Back on a probe's word: a trial off the read path.</b> A probe's answer proves the process
 * answers, not that it serves fd requests in time (a DataNode restarted after kill -9 answers its
 * first op 87 after hundreds of ms on a loaded host). So the path is healthy but on trial: no
 * reader sends a request. The trial is the fd request of the last open asked for there ({@link
 * #lastRequest}), sent on the probe thread with the path's deadline right after the probe's answer;
 * failing that, the first open that comes offers its request ({@link #offerTrial}) and reads the
 * stock way at once. Its answer within the floor ends the trial (every open asks again); a timeout
 * or a slow answer makes the path suspect again, as a reader's request would have, at no reader's
 * cost. One trial at a time per path.
 *
 * <p><b>Settings.</b> The process-wide instance takes its {@link HealthPolicy} from the first
 * engine that asks for it; an engine with other {@code scr.client.health.*} values logs once that
 * they are not used.
 *
 * <p>Concurrency: thread-safe. {@link #admitsNewOpens} is a concurrent-map read and volatile reads.
 * Paths are created on first use and kept for the life of the process (a host has a few DataNode
 * sockets). At most one probe and one trial per path are scheduled or running (a CAS on the path's
 * flag for each); both run on the scheduler's thread.
 */
public final class DataNodeHealth {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodeHealth.class);

  private static final Object SHARED_LOCK = new Object();

  @com.google.errorprone.annotations.concurrent.GuardedBy("SHARED_LOCK")
  private static DataNodeHealth shared;

  @com.google.errorprone.annotations.concurrent.GuardedBy("SHARED_LOCK")
  private static boolean warnedOtherPolicy;

  private final HealthPolicy policy;
  private final Ticker ticker;
  private final ProbeScheduler scheduler;
  private final LivenessProbe probe;
  private final ConcurrentHashMap<String, PathHealth> paths = new ConcurrentHashMap<>();

  /** Told the path of a DataNode that answers again after it was unresponsive or dead. */
  private final java.util.List<java.util.function.Consumer<String>> recoveryListeners =
      new java.util.concurrent.CopyOnWriteArrayList<>();

  /** Whether an engine ever registered ({@link #onRecovery}): then probing ends with the last. */
  private volatile boolean everRegistered;

  /** A registry of its own (tests; production uses {@link #shared}). */
  public DataNodeHealth(
      HealthPolicy policy, Ticker ticker, ProbeScheduler scheduler, LivenessProbe probe) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.probe = Objects.requireNonNull(probe, "probe");
  }

  /**
   * The process-wide registry, created with {@code policy} by the first caller; a later caller with
   * another policy gets it too (logged once).
   */
  public static DataNodeHealth shared(HealthPolicy policy) {
    synchronized (SHARED_LOCK) {
      if (shared == null) {
        shared =
            new DataNodeHealth(
                policy, Ticker.systemTicker(), ProbeScheduler.daemonThread(), new LivenessProbe());
      } else if (!shared.policy.equals(policy) && !warnedOtherPolicy) {
        warnedOtherPolicy = true;
        LOG.info(
            "DataNode health is shared by the whole process and keeps the settings it was"
                + " created with ({}); scr.client.health.* values of a later client context"
                + " ({}) are not used",
            shared.policy,
            policy);
      }
      return shared;
    }
  }

  /** The health of {@code path}, created healthy on first use. */
  public PathHealth of(String path) {
    PathHealth h = paths.get(path);
    if (h != null) {
      return h;
    }
    return paths.computeIfAbsent(
        path, p -> new PathHealth(p, policy, ticker, () -> startProbe(p), () -> recovered(p)));
  }

  /**
   * How long a path that is not healthy is probed after the last read that asked about it: a
   * DataNode nobody reads from (a socket left configured for a DataNode that is gone) is not probed
   * for ever; the next read that asks starts the probe again.
   */
  static final long PROBE_WHILE_ASKED_SECONDS = 5;

  static final long PROBE_WHILE_ASKED_NANOS =
      java.util.concurrent.TimeUnit.SECONDS.toNanos(PROBE_WHILE_ASKED_SECONDS);

  /**
   * How long a dead path is probed after the last read that asked about it. A probe of a dead
   * DataNode is a refused connect (microseconds), and readers that ride out a rolling restart on
   * replicas open already ask nothing: probed on, the DataNode is seen within a probe interval of
   * binding its socket again, and its trial is answered before a new block needs it.
   */
  static final long PROBE_WHILE_DEAD_SECONDS = 60;

  private static long probeWindowNanos(PathHealth h) {
    return h.state() == HealthState.DEAD
        ? java.util.concurrent.TimeUnit.SECONDS.toNanos(PROBE_WHILE_DEAD_SECONDS)
        : PROBE_WHILE_ASKED_NANOS;
  }

  /**
   * Whether a replica not open yet may be asked for at {@code path} now. A read that asks about a
   * path that is not healthy keeps its probe going (and restarts one that stopped for want of
   * readers).
   */
  public boolean admitsNewOpens(String path) {
    PathHealth h = paths.get(path);
    if (h == null || h.admitsNewOpen()) {
      return true;
    }
    if (h.state() == HealthState.HEALTHY) {
      return false; // on trial, the trial request queued or sent: the probe has done its part
    }
    h.askedAt(ticker.read());
    if (!h.probing.get()) {
      startProbe(path);
    }
    return false;
  }

  /** The state of {@code path} now ({@link HealthState#HEALTHY} for a path never used). */
  public HealthState state(String path) {
    PathHealth h = paths.get(path);
    return h == null ? HealthState.HEALTHY : h.state();
  }

  /**
   * Tells {@code listener} the path of every DataNode that answers again after it was unresponsive
   * or dead (on the thread that saw the answer: it must not block), until the returned handle is
   * closed. An engine uses it to retry at once what it backed off while the DataNode was away.
   */
  public Registration onRecovery(java.util.function.Consumer<String> listener) {
    recoveryListeners.add(Objects.requireNonNull(listener, "listener"));
    everRegistered = true;
    return () -> {
      if (recoveryListeners.remove(listener) && recoveryListeners.isEmpty()) {
        // The last engine closed: nobody reads, so nothing is probed (the probe thread ends
        // within a probe interval) and no trial request keeps a closed engine reachable.
        for (PathHealth h : paths.values()) {
          h.forgetRequest(h.lastRequest());
        }
      }
    };
  }

  /**
   * Whether every engine that registered has closed: probes stop then (a health used without
   * engines, as in its unit tests, probes as long as readers ask).
   */
  private boolean noEngineLeft() {
    return everRegistered && recoveryListeners.isEmpty();
  }

  /** A listener's registration; closing it ends the registration (idempotent). */
  @FunctionalInterface
  public interface Registration extends AutoCloseable {
    @Override
    void close();
  }

  private void recovered(String path) {
    for (java.util.function.Consumer<String> l : recoveryListeners) {
      try {
        l.accept(path);
      } catch (RuntimeException e) {
        LOG.warn("A DataNode recovery listener failed for {}", path, e);
      }
    }
  }

  /**
   * Whether a request may be sent to {@code path} on the calling thread now: healthy, and not on a
   * probe's word only (then {@link #offerTrial} instead).
   */
  public boolean admitsRequests(String path) {
    PathHealth h = paths.get(path);
    return h == null || h.admitsRequests();
  }

  /**
   * Whether {@code path} is back on a probe's word only: no request is sent on a reader's thread
   * (an open offers its request as the trial, {@link #offerTrial}), nor a batch of opportunistic
   * opens (prefetch).
   */
  public boolean onTrial(String path) {
    PathHealth h = paths.get(path);
    return h != null && h.onTrial();
  }

  /** One request for a replica, sent as a path's trial on the probe thread. */
  @FunctionalInterface
  public interface TrialRequest {
    /**
     * Sends the request and waits at most {@code deadlineMs} for the answer (for the connect and
     * each read and write); returns when it was answered (a refusal included, thrown as {@link
     * ShortCircuitRefusedException}), releasing what the answer passed.
     */
    void send(int deadlineMs) throws IOException;
  }

  /**
   * Remembers {@code request}, the fd request of an open asked for at {@code path} now, as the one
   * to send as the trial when a probe next finds the DataNode answering again (then at once, on the
   * probe thread, with no reader needed). Cheap: one volatile write.
   */
  public void lastRequest(String path, TrialRequest request) {
    PathHealth h = paths.get(path);
    if (h != null) {
      h.lastRequest(request);
    }
  }

  /**
   * Offers {@code request} as the trial of {@code path} when the DataNode there is back on a
   * probe's word only and no trial is queued or sent: it is then sent on the probe thread, bounded
   * by the path's deadline, and its answer or failure is fed to the path's health as a reader's
   * request would be. Never blocks. The caller reads the stock way either way.
   *
   * @return whether the request was taken as the trial
   */
  public boolean offerTrial(String path, TrialRequest request) {
    PathHealth h = paths.get(path);
    if (h == null || !h.takeTrial()) {
      return false;
    }
    scheduler.schedule(() -> runTrial(h, request), 0);
    return true;
  }

  /** Sends the trial of {@code h}'s path (scheduler thread). */
  void runTrial(PathHealth h, TrialRequest request) {
    try {
      if (!h.onTrial()) {
        return; // the path left the trial while this waited for the thread
      }
      long start = ticker.read();
      try {
        request.send(h.deadlineMillis());
        h.answered(ticker.read() - start);
      } catch (IOException e) {
        if (e instanceof java.io.InterruptedIOException && !isTimeout(e)) {
          h.forgetRequest(request); // not sent (its engine closed): says nothing of the DataNode
        }
        requestFailed(h.path(), e, ticker.read() - start, false);
      } catch (RuntimeException e) {
        LOG.debug("the trial request to {} failed", h.path(), e);
        h.faltered("the trial request failed: " + e);
      }
    } finally {
      h.trialEnded();
    }
  }

  /**
   * Whether a reader choosing among DataNodes should prefer another to {@code path} now: not
   * healthy, or back on a probe's word only ({@link PathHealth#unwell}).
   */
  public boolean unwell(String path) {
    PathHealth h = paths.get(path);
    return h != null && h.unwell();
  }

  /**
   * How long a reader's request to {@code path} may wait for its answer now (ms): the deadline, but
   * no more than {@code scr.client.health.read.wait.max.ms} ({@link PathHealth#readWaitNanos}).
   * Probes and the trial request, sent off the read path, wait the whole deadline.
   */
  public int deadlineMillis(String path) {
    return of(path).readWaitMillis();
  }

  /** The longest deadline ({@code scr.client.health.deadline.max.ms}), ms: bounds a batch. */
  public int maxDeadlineMillis() {
    return (int) Math.max(1, java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(policy.capNanos()));
  }

  /** A request to {@code path} was answered (whatever the answer) after {@code latencyNanos}. */
  public void answered(String path, long latencyNanos) {
    of(path).answered(latencyNanos);
  }

  /**
   * A request to {@code path} failed with {@code e}: a timeout is a wait of the whole deadline, a
   * failed connect (other than a timeout) means nobody listens, a reset or EOF inside an exchange
   * is suspect. A refusal, a rejected token or a malformed reply is an answer; an interrupt says
   * nothing about the DataNode.
   *
   * @return whether {@code e} was a wait of the whole deadline (the caller counts it as such)
   */
  public boolean requestFailed(String path, IOException e, long latencyNanos) {
    return requestFailed(path, e, latencyNanos, true);
  }

  /**
   * {@link #requestFailed(String, IOException, long)}; {@code readersWait}: whether the request was
   * bounded by a reader's wait ({@link #deadlineMillis}) rather than the whole deadline. A timeout
   * of such a request makes the path suspect, never unresponsive, unless it lasted the cap (a batch
   * of opens is bounded by it).
   */
  private boolean requestFailed(
      String path, IOException e, long latencyNanos, boolean readersWait) {
    if (e instanceof ShortCircuitRefusedException
        || e instanceof InvalidToken
        || e instanceof ProtocolException) {
      answered(path, latencyNanos);
      return false;
    }
    if (isTimeout(e)) {
      PathHealth h = of(path);
      if (readersWait
          && h.readWaitNanos() < h.deadlineNanos()
          && latencyNanos < policy.capNanos()) {
        outwaited(h); // a reader's wait, shorter than the deadline, says nothing of the DataNode
      } else {
        h.timedOut("no answer within " + h.deadlineMillis() + " ms: " + e.getMessage());
      }
      return true;
    }
    if (e instanceof DomainConnectException) {
      of(path).refused(e.getMessage());
    } else if (!(e instanceof InterruptedIOException)
        && !(e instanceof ClosedByInterruptException)) {
      of(path).faltered(e.toString());
    }
    return false;
  }

  /**
   * A reader's request to {@code h}'s path went unanswered for the reader's wait, shorter than the
   * deadline: no state change, but a check (one probe bounded by the whole deadline, on the probe
   * thread) during which readers go to other replicas ({@link PathHealth#startCheck}).
   */
  private void outwaited(PathHealth h) {
    if (h.startCheck()) {
      scheduler.schedule(() -> runCheck(h), 0);
    }
  }

  /**
   * The check of a healthy path a reader outwaited (scheduler thread): answered, the path is on
   * trial and the outwaited request is sent as the trial at once (its answer within the floor ends
   * it, a slower one makes the path suspect: the rule every answer follows); unanswered within the
   * deadline, the path is suspect, as after a request that waited the deadline, and probed.
   */
  void runCheck(PathHealth h) {
    String path = h.path();
    try {
      h.probed();
      LivenessProbe.Result r = probe.probe(path, h.offersPing(), h.deadlineMillis());
      switch (r) {
        case ANSWERED:
          h.checkAnswered();
          h.checkEnded();
          probe.forget(path);
          DataNodeHealth.TrialRequest last = h.lastRequest();
          if (last != null && h.takeTrial()) {
            runTrial(h, last);
          }
          break;
        case NO_ANSWER:
          h.timedOut(
              "a reader's request went unanswered for "
                  + h.readWaitMillis()
                  + " ms and a probe after it for "
                  + h.deadlineMillis()
                  + " ms");
          break;
        default:
          h.refused("the DataNode closed the probe's connection without an answer");
          break;
      }
    } catch (IOException | RuntimeException e) {
      probeFailed(h, e);
    } finally {
      h.checkEnded();
    }
  }

  /** What a probe that failed with {@code e} (no answer, or no connection) says of its DataNode. */
  private static void probeFailed(PathHealth h, Exception e) {
    if (isTimeout(e)) {
      h.timedOut("a probe's connect got no answer within " + h.deadlineMillis() + " ms");
    } else if (e instanceof DomainConnectException) {
      h.refused(e.getMessage());
    } else {
      h.refused("a probe failed: " + e);
    }
  }

  /** Whether {@code e} is a wait of a whole deadline: a read or connect timeout. */
  public static boolean isTimeout(Throwable e) {
    return e instanceof SocketTimeoutException
        || (e instanceof DomainConnectException && e.getCause() instanceof SocketTimeoutException);
  }

  /**
   * The bound of shared-memory segment requests (op 89, the first exchange with a DataNode, made on
   * a reader's thread when its slot pool starts): a reader's wait ({@link #deadlineMillis}); one
   * that waits it makes the path suspect like a reader's fd request that waited as long.
   */
  public io.scr.core.internal.net.DomainSocketPool.Deadlines segmentDeadlines() {
    return new io.scr.core.internal.net.DomainSocketPool.Deadlines() {
      @Override
      public int deadlineMillis(String path) {
        return DataNodeHealth.this.deadlineMillis(path);
      }

      @Override
      public void timedOut(String path, String what) {
        PathHealth h = of(path);
        if (h.readWaitNanos() < h.deadlineNanos()) {
          outwaited(h); // bounded by a reader's wait, not the whole deadline
        } else {
          h.timedOut(what);
        }
      }
    };
  }

  /**
   * A request to {@code path} outside the UNIX socket (a stock DataNode's RPC) waited its whole
   * bound unanswered: as a timed-out fd request, the path becomes suspect and is probed.
   */
  public void timedOut(String path, String what) {
    of(path).timedOut(what);
  }

  /** The DataNode at {@code path} closed a connection scr did not close (a segment's). */
  public void faltered(String path, String what) {
    of(path).faltered(what);
  }

  /** Whether the peer at {@code path} answers the shim's PING (then probes use it). */
  public void offersPing(String path, boolean yes) {
    of(path).offersPing(yes);
  }

  /** Every path's health, by path. */
  public List<HealthStatus> snapshot() {
    List<HealthStatus> out = new ArrayList<>();
    for (PathHealth h : paths.values()) {
      out.add(h.status());
    }
    out.sort(Comparator.comparing(HealthStatus::path));
    return Collections.unmodifiableList(out);
  }

  private void startProbe(String path) {
    PathHealth h = paths.get(path);
    if (h != null && h.probing.compareAndSet(false, true)) {
      scheduler.schedule(() -> runProbe(h), 0);
    }
  }

  /** One probe of {@code h}'s path; schedules the next while the path is not healthy. */
  void runProbe(PathHealth h) {
    String path = h.path();
    if (h.state() != HealthState.HEALTHY) {
      h.probed();
      try {
        LivenessProbe.Result r = probe.probe(path, h.offersPing(), h.deadlineMillis());
        switch (r) {
          case ANSWERED:
            h.probeAnswered();
            DataNodeHealth.TrialRequest last = h.lastRequest();
            if (last != null && h.takeTrial()) {
              runTrial(h, last); // at once, on this thread: no reader needs to come first
            }
            break;
          case NO_ANSWER:
            h.timedOut("a probe got no answer within " + h.deadlineMillis() + " ms");
            break;
          default:
            h.refused("the DataNode closed the probe's connection without an answer");
            break;
        }
      } catch (IOException | RuntimeException e) {
        probeFailed(h, e);
      }
    }
    if (h.state() != HealthState.HEALTHY
        && ticker.read() - h.askedAtNanos() < probeWindowNanos(h)
        && !noEngineLeft()) {
      scheduler.schedule(() -> runProbe(h), h.policy().probeIntervalNanos());
      return;
    }
    probe.forget(path); // healthy, or nobody asked for a while: the next ask starts again
    h.probing.set(false);
    // A change after the check above found the flag still set and scheduled nothing.
    if (h.state() != HealthState.HEALTHY
        && ticker.read() - h.askedAtNanos() < probeWindowNanos(h)
        && !noEngineLeft()
        && h.probing.compareAndSet(false, true)) {
      scheduler.schedule(() -> runProbe(h), h.policy().probeIntervalNanos());
    }
  }
}
