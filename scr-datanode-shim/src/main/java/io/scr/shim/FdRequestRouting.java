package io.scr.shim;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the shim serves fd requests (op 87): on the event loop that decoded them, with no thread
 * hand-off, unless fd requests served there have been slow lately; then on the worker threads.
 *
 * <p>Why both. A request served on its event loop costs two thread wake-ups (the request and the
 * receipt), as on a stock DataNode's {@code DataXceiver}; handed to a worker it costs two more (the
 * worker, and the event loop again for the bookkeeping). Measured on the 2-core benchmark machine
 * with the JIT warm, a replica's first read was 0.53-0.66x stock's median served on the loop (three
 * rounds, 1 and 8 threads) and 1.23-1.51x through the workers (docs/benchmarks.md, "Replica open").
 * But an event loop serves many connections: while it opens one replica's files they all wait. A
 * file open that reads the disk (the DataNode's directories or the meta file's header not in the
 * kernel's caches) would stall every connection of that loop, which a stock DataNode (a thread per
 * connection) does not. So an fd request that takes longer than {@code maxNanos} on a loop because
 * the loop thread read from storage sends every fd request to the workers for {@code backoffNanos}:
 * a slow disk costs an event loop's other connections at most one such stall per backoff.
 *
 * <p>Only a storage read counts ({@link StallProbe}). A loop thread that waited for a lock (which
 * every thread serving a request needs too), was stopped by a garbage collection, waited for a core
 * or computed for that long would not have served faster on the workers; on the 2-core benchmark
 * machine such requests sent every fd request to the workers within the benchmark's warm-up, for
 * nothing. They are counted ({@code fd_requests_slow_kept_on_loop}) and logged at DEBUG with their
 * phases, and the loop keeps serving; a wait longer than {@link #LONG_WAIT_FACTOR} times the bound
 * moves them all the same. Where the cause cannot be told ({@link StallProbe.Cause#UNKNOWN}) a slow
 * request moves them.
 *
 * <p>Each move is counted ({@code fd_requests_moved_to_workers}); the first is logged at INFO with
 * the remedy, later ones at DEBUG.
 *
 * <p>Thread-safety: one instance per shim server, shared by every connection; {@link
 * #onEventLoop()}, {@link #startOnEventLoop()} and {@link #servedOnEventLoop} run on event loops.
 * The deadline is a volatile long; two loops moving at once both write about the same deadline
 * (benign) and both count.
 */
final class FdRequestRouting {
  private static final Logger LOG = LoggerFactory.getLogger(FdRequestRouting.class);

  private final boolean onLoop;
  private final long maxNanos;
  private final long backoffNanos;
  private final LongSupplier nanoClock;
  private final StallProbe probe;
  private final LongAdder moves;
  private final LongAdder kept;
  private final AtomicBoolean logged = new AtomicBoolean();

  /**
   * Until when (on {@link #nanoClock}) fd requests go to the workers; meaningful if {@link #held}.
   */
  private volatile long workersUntil;

  private volatile boolean held;

  /**
   * A request that waited without reading storage moves fd requests too once it took this many
   * times {@code maxNanos} (50 ms by default): a lock held that long (a writer holding the
   * dataset's lock through disk I/O) would hold up the loop's other connections, whose releases and
   * segment requests need no such lock, where a stock DataNode's other threads go on. The lock
   * waits measured on the loaded 2-core benchmark host (holders preempted) took 6-19.5 ms.
   */
  static final long LONG_WAIT_FACTOR = 10;

  FdRequestRouting(
      boolean onLoop,
      long maxNanos,
      long backoffNanos,
      LongSupplier nanoClock,
      StallProbe probe,
      LongAdder moves,
      LongAdder kept) {
    this.onLoop = onLoop;
    this.probe = probe;
    this.moves = moves;
    this.kept = kept;
    this.maxNanos = maxNanos;
    this.backoffNanos = backoffNanos;
    this.nanoClock = nanoClock;
  }

  /** From the shim's configuration, on {@code ticker}, counting moves in metrics. */
  static FdRequestRouting from(ShimConfig config, ShimMetrics metrics, Ticker ticker) {
    return new FdRequestRouting(
        config.fdRequestsOnEventLoop,
        TimeUnit.MILLISECONDS.toNanos(config.fdRequestsLoopMaxMs),
        TimeUnit.MILLISECONDS.toNanos(config.fdRequestsLoopBackoffMs),
        ticker::read,
        new StallProbe(),
        metrics.fdRequestsMovedToWorkers,
        metrics.fdRequestsSlowKeptOnLoop);
  }

  /** Whether the next fd request is served on the event loop that decoded it. */
  boolean onEventLoop() {
    if (!onLoop) {
      return false;
    }
    if (held) {
      if (nanoClock.getAsLong() - workersUntil < 0) {
        return false;
      }
      held = false;
    }
    return true;
  }

  /** Before an fd request is handled on an event loop (this thread): the slow check's baseline. */
  void startOnEventLoop() {
    probe.start();
  }

  /**
   * An fd request served on this event loop took {@code nanos} to handle (files opened, answered)
   * since {@link #startOnEventLoop}; {@code r}'s phase marks (may be null) go into the log when it
   * was slow.
   */
  void servedOnEventLoop(long nanos, Reply r) {
    if (nanos <= maxNanos) {
      return;
    }
    StallProbe.Cause cause = probe.slowCause();
    boolean longWait = cause == StallProbe.Cause.WAITED && nanos > LONG_WAIT_FACTOR * maxNanos;
    if (cause != StallProbe.Cause.DISK && cause != StallProbe.Cause.UNKNOWN && !longWait) {
      kept.increment();
      if (LOG.isDebugEnabled()) {
        LOG.debug(
            "An fd request took {} µs on a shim event loop{}, over {}, without reading storage"
                + " ({}): fd requests stay on the loop",
            TimeUnit.NANOSECONDS.toMicros(nanos),
            phases(r),
            ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS,
            cause);
      }
      return;
    }
    workersUntil = nanoClock.getAsLong() + backoffNanos;
    held = true;
    moves.increment();
    String message =
        "An fd request took {} on a shim event loop, over {}={} ms, and {}; fd requests go to the"
            + " worker threads for {} s so that the loop's other connections do not wait on this"
            + " disk. A DataNode whose storage is often this slow can set {}=false (counted in"
            + " fd_requests_moved_to_workers)";
    Object[] args = {
      TimeUnit.NANOSECONDS.toMillis(nanos) + " ms" + phases(r),
      ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS,
      TimeUnit.NANOSECONDS.toMillis(maxNanos),
      cause == StallProbe.Cause.DISK
          ? "the loop thread read from storage in it (a cold directory or file)"
          : longWait
              ? "the loop thread waited in it (a lock held that long, e.g. by a disk-bound"
                  + " writer, also holds up the loop's other connections)"
              : "the loop thread waited in it, for the disk as far as this host can tell (it"
                  + " does not account a thread's reads)",
      TimeUnit.NANOSECONDS.toSeconds(backoffNanos),
      ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP
    };
    if (logged.compareAndSet(false, true)) {
      LOG.info(message, args);
    } else {
      LOG.debug(message, args);
    }
  }

  /** " (check a µs, open b µs, register c µs)" from a granted reply's marks; else "". */
  private static String phases(Reply r) {
    if (r == null || r.openStartNanos == 0 || r.openEndNanos == 0 || r.builtNanos == 0) {
      return "";
    }
    return " (check "
        + TimeUnit.NANOSECONDS.toMicros(r.openStartNanos - r.startNanos)
        + " µs, open "
        + TimeUnit.NANOSECONDS.toMicros(r.openEndNanos - r.openStartNanos)
        + " µs, register "
        + TimeUnit.NANOSECONDS.toMicros(r.builtNanos - r.openEndNanos)
        + " µs)";
  }
}
