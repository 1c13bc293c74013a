package io.scr.benchmarks.read;

import io.scr.core.metrics.ClientSnapshot;
import io.scr.core.stats.ClientCounters;
import java.util.Map;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The breakdown of replica opens, µs, as JMH secondary results: one thread of each iteration fills
 * them and the others report 0, so JMH's sum is the figure. Client fields are 0 for the stock paths
 * (stock has no such timers), shim fields 0 outside mode B.
 *
 * <p>Thread-safety: one instance per reader thread (JMH {@code Scope.Thread}), its fields written
 * only by JMH's iteration set-up and tear-down on that thread. The benchmark's shared state it
 * reads is thread-safe ({@code ReplicaOpenBenchmark}'s atomics and queue); the previous shim
 * counters ({@code shimBefore}) are read and replaced only by the one thread that wins {@code
 * iterationReported} at an iteration's end, after every reader has stopped.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class ReplicaOpenPhases {
  public long clientOpenP50;
  public long clientOpenP99;
  public long clientSlotP50;
  public long clientSlotP99;
  public long clientExchangeP50;
  public long clientExchangeP99;
  public long clientFilesP50;
  public long clientFilesP99;
  public long shimQueueMean;
  public long shimQueueP50;
  public long shimQueueP99;
  public long shimCheckMean;
  public long shimCheckP99;
  public long shimOpenMean;
  public long shimOpenP99;
  public long shimRegisterMean;
  public long shimRegisterP99;
  public long shimHandoffMean;
  public long shimHandoffP50;
  public long shimHandoffP99;
  public long shimSendMean;
  public long shimSendP99;
  public long shimTotalMean;
  public long shimTotalP50;
  public long shimTotalP99;

  /**
   * Mode B, this iteration: times a slow fd request moved serving to the shim's workers, and slow
   * ones that did not (the loop thread was preempted, paused by a GC, or computing).
   */
  public long shimMovesToWorkers;

  public long shimSlowKeptOnLoop;

  /**
   * File systems (generations) the harness opened while this iteration's reads were timed, each
   * competing with them: with {@code generations=DURING} about one per 2048 reads; with {@code
   * BEFORE} only when the readers outran the estimate, 0 normally.
   */
  public long harnessOpens;

  private long harnessOpensBefore;

  @Setup(Level.Iteration)
  public void reset(ReplicaOpenBenchmark bench) {
    clientOpenP50 = clientOpenP99 = clientSlotP50 = clientSlotP99 = 0;
    clientExchangeP50 = clientExchangeP99 = clientFilesP50 = clientFilesP99 = 0;
    shimQueueMean = shimQueueP50 = shimQueueP99 = shimCheckMean = shimCheckP99 = 0;
    shimOpenMean = shimOpenP99 = shimRegisterMean = shimRegisterP99 = 0;
    shimHandoffMean = shimHandoffP50 = shimHandoffP99 = shimSendMean = shimSendP99 = 0;
    shimTotalMean = shimTotalP50 = shimTotalP99 = 0;
    shimMovesToWorkers = shimSlowKeptOnLoop = harnessOpens = 0;
    harnessOpensBefore = bench.harnessOpens.get();
    bench.iterationReported.set(false);
  }

  @TearDown(Level.Iteration)
  public void record(ReplicaOpenBenchmark bench) {
    if (!bench.iterationReported.compareAndSet(false, true)) {
      return;
    }
    harnessOpens = bench.harnessOpens.get() - harnessOpensBefore;
    long[] sum = new long[2 + 2 * CLIENT_PHASES.length];
    int n = 0;
    for (ReplicaOpenBenchmark.ClosedEngine e; (e = bench.closedEngines.poll()) != null; ) {
      if (REPORT) {
        report(e.number, e.scr);
      }
      ClientSnapshot s = e.scr.metricsSnapshot();
      if (s.replicaOpenLatency().count() == 0) {
        continue;
      }
      long[] t = clientTimers(s);
      for (int i = 0; i < sum.length; i++) {
        sum[i] += t[i];
      }
      n++;
    }
    if (n == 0) {
      // No generation ended during this iteration: the one being read so far.
      long current = bench.ops.get() / ReplicaOpenBenchmark.BLOCKS;
      ReplicaOpenBenchmark.Generation g =
          bench.ring.get((int) (current % ReplicaOpenBenchmark.RING));
      if (g != null && g.number == current && g.fs instanceof io.scr.core.hdfs.ScrFileSystem) {
        ClientSnapshot s = ((io.scr.core.hdfs.ScrFileSystem) g.fs).scrClient().metricsSnapshot();
        if (s.replicaOpenLatency().count() > 0) {
          sum = clientTimers(s);
          n = 1;
        }
      }
    }
    if (n > 0) {
      clientOpenP50 = sum[0] / n / 1000;
      clientOpenP99 = sum[1] / n / 1000;
      clientSlotP50 = sum[2] / n / 1000;
      clientSlotP99 = sum[3] / n / 1000;
      clientExchangeP50 = sum[4] / n / 1000;
      clientExchangeP99 = sum[5] / n / 1000;
      clientFilesP50 = sum[6] / n / 1000;
      clientFilesP99 = sum[7] / n / 1000;
    }
    if (bench.shim != null) {
      Map<String, Long> now = bench.shim.counters();
      Map<String, Long> before = bench.shimBefore;
      bench.shimBefore = now;
      shimQueueMean = intervalMean(now, before, "queue");
      shimQueueP50 = stat(now, "queue", "p50_us");
      shimQueueP99 = stat(now, "queue", "p99_us");
      shimCheckMean = intervalMean(now, before, "check");
      shimCheckP99 = stat(now, "check", "p99_us");
      shimOpenMean = intervalMean(now, before, "open");
      shimOpenP99 = stat(now, "open", "p99_us");
      shimRegisterMean = intervalMean(now, before, "register");
      shimRegisterP99 = stat(now, "register", "p99_us");
      shimHandoffMean = intervalMean(now, before, "handoff");
      shimHandoffP50 = stat(now, "handoff", "p50_us");
      shimHandoffP99 = stat(now, "handoff", "p99_us");
      shimSendMean = intervalMean(now, before, "send");
      shimSendP99 = stat(now, "send", "p99_us");
      shimTotalMean = intervalMean(now, before, "total");
      shimTotalP50 = stat(now, "total", "p50_us");
      shimTotalP99 = stat(now, "total", "p99_us");
      shimMovesToWorkers = delta(now, before, "fd_requests_moved_to_workers");
      shimSlowKeptOnLoop = delta(now, before, "fd_requests_slow_kept_on_loop");
    }
  }

  private static long stat(Map<String, Long> m, String phase, String which) {
    return m.getOrDefault("phase.request_fds." + phase + "." + which, 0L);
  }

  private static long delta(Map<String, Long> now, Map<String, Long> before, String counter) {
    return now.getOrDefault(counter, 0L) - before.getOrDefault(counter, 0L);
  }

  private static long intervalMean(Map<String, Long> now, Map<String, Long> before, String p) {
    long count = stat(now, p, "count") - stat(before, p, "count");
    long total = stat(now, p, "total_us") - stat(before, p, "total_us");
    return count > 0 ? total / count : 0;
  }

  private static final ClientCounters.OpenPhase[] CLIENT_PHASES = ClientCounters.OpenPhase.values();

  /** [open p50, open p99, then p50, p99 of each client phase], nanoseconds. */
  private static long[] clientTimers(ClientSnapshot s) {
    long[] t = new long[2 + 2 * CLIENT_PHASES.length];
    ClientCounters.Latency open = s.replicaOpenLatency();
    t[0] = open.p50Nanos();
    t[1] = open.p99Nanos();
    for (int i = 0; i < CLIENT_PHASES.length; i++) {
      ClientCounters.Latency l = s.replicaOpenPhase(CLIENT_PHASES[i]);
      t[2 + 2 * i] = l.p50Nanos();
      t[3 + 2 * i] = l.p99Nanos();
    }
    return t;
  }

  /** {@code -Dscr.bench.replicaOpen.report=true}: one line per scr generation on stderr. */
  private static final boolean REPORT = Boolean.getBoolean("scr.bench.replicaOpen.report");

  private static void report(long number, io.scr.core.ScrClient scr) {
    io.scr.core.metrics.ClientSnapshot s = scr.metricsSnapshot();
    StringBuilder sb = new StringBuilder("replica-open g").append(number);
    io.scr.core.stats.ClientCounters.Latency open = s.replicaOpenLatency();
    sb.append(" opens=")
        .append(open.count())
        .append(" open_us{p50=")
        .append(open.p50Nanos() / 1000)
        .append(" p99=")
        .append(open.p99Nanos() / 1000)
        .append(" max=")
        .append(open.maxNanos() / 1000)
        .append('}');
    for (io.scr.core.stats.ClientCounters.OpenPhase ph :
        io.scr.core.stats.ClientCounters.OpenPhase.values()) {
      io.scr.core.stats.ClientCounters.Latency l = s.replicaOpenPhase(ph);
      sb.append(' ')
          .append(ph)
          .append("_us{p50=")
          .append(l.p50Nanos() / 1000)
          .append(" p99=")
          .append(l.p99Nanos() / 1000)
          .append(" max=")
          .append(l.maxNanos() / 1000)
          .append('}');
    }
    sb.append(" cache{miss=")
        .append(s.cache().missCount())
        .append(" loads=")
        .append(s.cache().loadSuccessCount())
        .append(" maxLoad_us=")
        .append(s.cache().maxLoadTimeNanos() / 1000)
        .append('}');
    for (io.scr.shm.SlotPoolStats p : s.slotPools()) {
      sb.append(" slots{alloc=")
          .append(p.allocations())
          .append(" waited=")
          .append(p.allocationsThatWaited())
          .append(" timeouts=")
          .append(p.allocationTimeouts())
          .append(" wait_us{p50=")
          .append(p.allocationWaitP50Nanos() / 1000)
          .append(" p99=")
          .append(p.allocationWaitP99Nanos() / 1000)
          .append(" max=")
          .append(p.allocationWaitMaxNanos() / 1000)
          .append("} fetches=")
          .append(p.segmentFetches())
          .append('}');
    }
    System.err.println(sb);
  }
}
