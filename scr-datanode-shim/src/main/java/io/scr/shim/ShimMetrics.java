package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;

/**
 * The shim's counters: requests by op and status, fds passed, live segments, slots and clients,
 * per-op latency, rejections by reason.
 *
 * <p>Concurrency: every counter is a {@link LongAdder}, updated lock-free from event-loop and
 * worker threads; per-op latency goes into an HdrHistogram {@link Recorder} (wait-free record).
 * Readers ({@link #snapshot()}, {@link #latency}) sum the adders without a lock, so a snapshot is
 * not an atomic cut across counters (each value is exact, their sum may lag by in-flight requests),
 * and fold each Recorder's interval into a cumulative histogram under that op's {@link OpLatency}
 * monitor, which only readers take.
 */
final class ShimMetrics {
  /** The ops the shim serves, for per-op counters. */
  enum OpKind {
    REQUEST_FDS("request_fds"),
    RELEASE_FDS("release_fds"),
    REQUEST_SHM("request_shm"),
    EXT_BATCH_FDS("ext_batch_fds"),
    EXT_BATCH_RELEASE("ext_batch_release"),
    EXT_HELLO("ext_hello"),
    EXT_PING("ext_ping"),
    EXT_REPLICA_STATE("ext_replica_state");

    final String label;

    OpKind(String label) {
      this.label = label;
    }
  }

  /**
   * Where a granted REQUEST_SHORT_CIRCUIT_FDS (op 87) spends its time in the shim, from the frame
   * decoded on the event loop to the fds passed (the shim's part of a replica open). Each is
   * recorded once per op-87 request that passed fds; {@link #TOTAL} is the whole span.
   */
  enum FdPhase {
    /** Decoded on the event loop until a worker starts it: the first hand-off (queue and wake). */
    QUEUE("queue"),
    /** On the worker: parse, block pool readiness, block token, fd reservation. */
    CHECK("check"),
    /** On the worker: the dataset's block lookup and opening the block and meta files. */
    OPEN("open"),
    /** On the worker: the replica lookup, the slot registration and the response message. */
    REGISTER("register"),
    /** Built until the event loop starts sending it: the second hand-off (0 when not handed). */
    HANDOFF("handoff"),
    /** The response write and the {@code sendmsg} of the fds. */
    SEND("send"),
    /** Decoded until the fds are passed. */
    TOTAL("total");

    final String label;

    FdPhase(String label) {
      this.label = label;
    }
  }

  /** Why a connection or request was refused. */
  enum Rejection {
    BAD_VERSION,
    UNKNOWN_OP,
    BAD_VARINT,
    OVERSIZED,
    BAD_PROTOBUF,
    DATA_ON_SHM_SOCKET,
    CLIENT_CONNECTIONS,
    CLIENT_SEGMENTS,
    CLIENT_SLOTS,
    BUSY,
    RECEIPT_MISSING,
    ACCESS_TOKEN,
    NO_CREDENTIALS,
    WRITE_TIMEOUT,
    INTERNAL_ERROR,
    TRUNCATED_SEGMENT,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    PENDING_FDS,
    PENDING_REPLY_BYTES,
    PENDING_INPUT,
    INFLIGHT_FDS,
    ACCEPT_FD_LIMIT
  }

  private static final int STATUSES = 16;

  private final LongAdder[][] requests = new LongAdder[OpKind.values().length][STATUSES];
  private final OpLatency[] latency = new OpLatency[OpKind.values().length];
  private final LongAdder[] rejections = new LongAdder[Rejection.values().length];
  private final OpLatency[] fdPhases = new OpLatency[FdPhase.values().length];
  final LongAdder fdsPassed = new LongAdder();

  /** Times a slow fd request on an event loop, on the disk, moved fd requests to the workers. */
  final LongAdder fdRequestsMovedToWorkers = new LongAdder();

  /**
   * fd requests slower than scr.shim.fd.requests.loop.max.ms on an event loop whose thread did not
   * read from storage (a lock, a GC, preempted, CPU): serving stayed on the loop.
   */
  final LongAdder fdRequestsSlowKeptOnLoop = new LongAdder();

  final LongAdder liveSegments = new LongAdder();
  final LongAdder liveSlots = new LongAdder();
  final LongAdder liveConnections = new LongAdder();
  final LongAdder slotsInvalidated = new LongAdder();
  final LongAdder invalidationScans = new LongAdder();
  final LongAdder uncachesDeferred = new LongAdder();

  /** Whether the DataNode caches blocks and the shim could not install {@link BlockCacheEvents}. */
  volatile boolean cacheEventsUnavailable;

  final LongAdder invalidationScanFailures = new LongAdder();
  final LongAdder nonFinalizedReplicasServed = new LongAdder();

  /**
   * Whether the socket path check trusted a directory (a test plugin): never true in production.
   */
  volatile boolean socketPathCheckSkipped;

  ShimMetrics() {
    for (int op = 0; op < requests.length; op++) {
      for (int s = 0; s < STATUSES; s++) {
        requests[op][s] = new LongAdder();
      }
      latency[op] = new OpLatency();
    }
    for (int i = 0; i < rejections.length; i++) {
      rejections[i] = new LongAdder();
    }
    for (int i = 0; i < fdPhases.length; i++) {
      fdPhases[i] = new OpLatency();
    }
  }

  /**
   * Records the phases of one op-87 reply whose send began at {@code sendStartNanos} and whose fds
   * were passed at {@code passedNanos}; replies without the marks of a granted op 87 (refusals,
   * other ops) are ignored.
   */
  void fdPhases(Reply r, long sendStartNanos, long passedNanos) {
    if (r.op != OpKind.REQUEST_FDS || r.decodedNanos == 0 || r.openStartNanos == 0) {
      return;
    }
    record(FdPhase.QUEUE, r.startNanos - r.decodedNanos);
    record(FdPhase.CHECK, r.openStartNanos - r.startNanos);
    record(FdPhase.OPEN, r.openEndNanos - r.openStartNanos);
    record(FdPhase.REGISTER, r.builtNanos - r.openEndNanos);
    record(FdPhase.HANDOFF, sendStartNanos - r.builtNanos);
    record(FdPhase.SEND, passedNanos - sendStartNanos);
    record(FdPhase.TOTAL, passedNanos - r.decodedNanos);
  }

  private void record(FdPhase phase, long nanos) {
    fdPhases[phase.ordinal()].record(nanos);
  }

  /** The distribution of {@code phase} of granted op-87 requests since the shim started. */
  Latency fdPhase(FdPhase phase) {
    return fdPhases[phase.ordinal()].cumulative();
  }

  void request(OpKind op, Status status, long nanos) {
    int s = status.getNumber();
    requests[op.ordinal()][s < STATUSES ? s : STATUSES - 1].increment();
    latency[op.ordinal()].record(nanos);
  }

  void reject(Rejection reason) {
    rejections[reason.ordinal()].increment();
  }

  long requests(OpKind op, Status status) {
    return requests[op.ordinal()][status.getNumber()].sum();
  }

  long rejections(Rejection reason) {
    return rejections[reason.ordinal()].sum();
  }

  /** The latency distribution of {@code op} since the shim started. */
  Latency latency(OpKind op) {
    return latency[op.ordinal()].cumulative();
  }

  /**
   * Every counter by name: {@code requests.<op>.<status>}, {@code
   * latency.<op>.mean_us|p50_us|p99_us|max_us}, {@code
   * phase.request_fds.<phase>.count|total_us|mean_us|p50_us|p99_us|max_us} ({@link FdPhase}),
   * {@code rejections.<reason>}, {@code fds_passed}, {@code live.segments|slots|connections}, ...
   * Zero-valued request and rejection counters are left out.
   */
  Map<String, Long> snapshot() {
    Map<String, Long> out = new TreeMap<>();
    for (OpKind op : OpKind.values()) {
      for (int s = 0; s < STATUSES; s++) {
        long v = requests[op.ordinal()][s].sum();
        if (v != 0) {
          Status status = Status.forNumber(s);
          String name = status == null ? "other" : status.name().toLowerCase(Locale.ROOT);
          out.put("requests." + op.label + "." + name, v);
        }
      }
      Latency l = latency(op);
      if (l.count > 0) {
        String prefix = "latency." + op.label;
        out.put(prefix + ".mean_us", TimeUnit.NANOSECONDS.toMicros(l.meanNanos));
        out.put(prefix + ".p50_us", TimeUnit.NANOSECONDS.toMicros(l.p50Nanos));
        out.put(prefix + ".p99_us", TimeUnit.NANOSECONDS.toMicros(l.p99Nanos));
        out.put(prefix + ".max_us", TimeUnit.NANOSECONDS.toMicros(l.maxNanos));
      }
    }
    for (FdPhase phase : FdPhase.values()) {
      Latency l = fdPhase(phase);
      if (l.count > 0) {
        String prefix = "phase.request_fds." + phase.label;
        out.put(prefix + ".count", l.count);
        // The sum, so that a reader can take the mean of an interval from two snapshots.
        out.put(prefix + ".total_us", l.meanNanos * l.count / 1000);
        out.put(prefix + ".mean_us", TimeUnit.NANOSECONDS.toMicros(l.meanNanos));
        out.put(prefix + ".p50_us", TimeUnit.NANOSECONDS.toMicros(l.p50Nanos));
        out.put(prefix + ".p99_us", TimeUnit.NANOSECONDS.toMicros(l.p99Nanos));
        out.put(prefix + ".max_us", TimeUnit.NANOSECONDS.toMicros(l.maxNanos));
      }
    }
    for (Rejection r : Rejection.values()) {
      long v = rejections[r.ordinal()].sum();
      if (v != 0) {
        out.put("rejections." + r.name().toLowerCase(Locale.ROOT), v);
      }
    }
    out.put("fds_passed", fdsPassed.sum());
    out.put("fd_requests_moved_to_workers", fdRequestsMovedToWorkers.sum());
    out.put("fd_requests_slow_kept_on_loop", fdRequestsSlowKeptOnLoop.sum());
    out.put("live.segments", liveSegments.sum());
    out.put("live.slots", liveSlots.sum());
    out.put("live.connections", liveConnections.sum());
    out.put("slots_invalidated", slotsInvalidated.sum());
    out.put("invalidation_scans", invalidationScans.sum());
    out.put("uncaches_deferred", uncachesDeferred.sum());
    out.put("cache_events_unavailable", cacheEventsUnavailable ? 1L : 0L);
    out.put("invalidation_scan_failures", invalidationScanFailures.sum());
    out.put("non_finalized_replicas_served", nonFinalizedReplicasServed.sum());
    out.put("socket_path_check_skipped", socketPathCheckSkipped ? 1L : 0L);
    return out;
  }

  /**
   * One op's latency: a Recorder written by event loops, folded into a cumulative histogram by
   * readers. Values are nanoseconds, kept to 2 significant digits above 1 µs, clamped to 10 min.
   */
  private static final class OpLatency {
    private static final long LOWEST_NANOS = 1000;
    private static final long MAX_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final Recorder recorder = new Recorder(LOWEST_NANOS, MAX_NANOS, 2);

    @GuardedBy("this")
    private final Histogram total = new Histogram(LOWEST_NANOS, MAX_NANOS, 2);

    @GuardedBy("this")
    private Histogram interval;

    void record(long nanos) {
      recorder.recordValue(Math.min(Math.max(0, nanos), MAX_NANOS));
    }

    synchronized Latency cumulative() {
      interval = recorder.getIntervalHistogram(interval);
      total.add(interval);
      return new Latency(
          total.getTotalCount(),
          (long) total.getMean(),
          total.getValueAtPercentile(50),
          total.getValueAtPercentile(99),
          total.getMaxValue());
    }
  }

  /** A latency distribution since start, in nanoseconds (all 0 when empty). Immutable. */
  static final class Latency {
    final long count;
    final long meanNanos;
    final long p50Nanos;
    final long p99Nanos;
    final long maxNanos;

    Latency(long count, long meanNanos, long p50Nanos, long p99Nanos, long maxNanos) {
      this.count = count;
      this.meanNanos = meanNanos;
      this.p50Nanos = p50Nanos;
      this.p99Nanos = p99Nanos;
      this.maxNanos = maxNanos;
    }
  }
}
