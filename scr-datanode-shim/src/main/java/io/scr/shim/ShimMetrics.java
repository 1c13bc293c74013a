package io.scr.shim;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;

/**
 * The shim's counters: requests by op and status, fds passed, live segments, slots and clients,
 * per-op latency, rejections by reason.
 *
 * <p>Concurrency: every counter is a {@link LongAdder} or {@link AtomicLong}, updated lock-free
 * from event-loop and worker threads; {@link #snapshot()} reads them without a lock, so a snapshot
 * is not an atomic cut across counters (each value is exact, their sum may lag by in-flight
 * requests).
 */
final class ShimMetrics {
  /** The ops the shim serves, for per-op counters. */
  enum OpKind {
    REQUEST_FDS("request_fds"),
    RELEASE_FDS("release_fds"),
    REQUEST_SHM("request_shm"),
    EXT_BATCH_FDS("ext_batch_fds"),
    EXT_BATCH_RELEASE("ext_batch_release"),
    EXT_HELLO("ext_hello");

    final String label;

    OpKind(String label) {
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
    ACCESS_TOKEN
  }

  private static final int STATUSES = 16;

  private final LongAdder[][] requests = new LongAdder[OpKind.values().length][STATUSES];
  private final LongAdder[] latencyNanos = new LongAdder[OpKind.values().length];
  private final LongAdder[] latencyCount = new LongAdder[OpKind.values().length];
  private final AtomicLong[] latencyMaxNanos = new AtomicLong[OpKind.values().length];
  private final LongAdder[] rejections = new LongAdder[Rejection.values().length];
  final LongAdder fdsPassed = new LongAdder();
  final LongAdder liveSegments = new LongAdder();
  final LongAdder liveSlots = new LongAdder();
  final LongAdder liveConnections = new LongAdder();
  final LongAdder slotsInvalidated = new LongAdder();
  final LongAdder invalidationScans = new LongAdder();
  final LongAdder nonFinalizedReplicasServed = new LongAdder();

  ShimMetrics() {
    for (int op = 0; op < requests.length; op++) {
      for (int s = 0; s < STATUSES; s++) {
        requests[op][s] = new LongAdder();
      }
      latencyNanos[op] = new LongAdder();
      latencyCount[op] = new LongAdder();
      latencyMaxNanos[op] = new AtomicLong();
    }
    for (int i = 0; i < rejections.length; i++) {
      rejections[i] = new LongAdder();
    }
  }

  void request(OpKind op, Status status, long nanos) {
    int s = status.getNumber();
    requests[op.ordinal()][s < STATUSES ? s : STATUSES - 1].increment();
    latencyNanos[op.ordinal()].add(nanos);
    latencyCount[op.ordinal()].increment();
    latencyMaxNanos[op.ordinal()].accumulateAndGet(nanos, Math::max);
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

  /**
   * Every counter by name: {@code requests.<op>.<status>}, {@code latency.<op>.mean_us|max_us},
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
      long count = latencyCount[op.ordinal()].sum();
      if (count > 0) {
        out.put(
            "latency." + op.label + ".mean_us", latencyNanos[op.ordinal()].sum() / count / 1000);
        out.put("latency." + op.label + ".max_us", latencyMaxNanos[op.ordinal()].get() / 1000);
      }
    }
    for (Rejection r : Rejection.values()) {
      long v = rejections[r.ordinal()].sum();
      if (v != 0) {
        out.put("rejections." + r.name().toLowerCase(Locale.ROOT), v);
      }
    }
    out.put("fds_passed", fdsPassed.sum());
    out.put("live.segments", liveSegments.sum());
    out.put("live.slots", liveSlots.sum());
    out.put("live.connections", liveConnections.sum());
    out.put("slots_invalidated", slotsInvalidated.sum());
    out.put("invalidation_scans", invalidationScans.sum());
    out.put("non_finalized_replicas_served", nonFinalizedReplicasServed.sum());
    return out;
  }
}
