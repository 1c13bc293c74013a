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
 * with the JIT warm, a replica's first read was 0.66x stock's median served on the loop and
 * 1.23-1.51x through the workers, in one round (docs/benchmarks.md, session 6). But an event loop
 * serves many connections: while it opens one replica's files they all wait. A file open that reads
 * the disk (the DataNode's directories not in the kernel's caches) or waits for the dataset's lock
 * (held by a writer) would stall every connection of that loop, which a stock DataNode (a thread
 * per connection) does not. So one fd request that takes longer than {@code maxNanos} on a loop
 * sends every fd request to the workers for {@code backoffNanos}: a slow disk costs an event loop's
 * other connections at most one such stall per backoff.
 *
 * <p>Each move is counted ({@link #movesToWorkers()}); the first is logged at INFO with the remedy,
 * later ones at DEBUG.
 *
 * <p>Thread-safety: one instance per shim server, shared by every connection; {@link
 * #onEventLoop()} and {@link #servedOnEventLoop} run on event loops. The deadline is a volatile
 * long; two loops moving at once both write about the same deadline (benign) and both count.
 */
final class FdRequestRouting {
  private static final Logger LOG = LoggerFactory.getLogger(FdRequestRouting.class);

  private final boolean onLoop;
  private final long maxNanos;
  private final long backoffNanos;
  private final LongSupplier nanoClock;
  private final LongAdder moves;
  private final AtomicBoolean logged = new AtomicBoolean();

  /**
   * Until when (on {@link #nanoClock}) fd requests go to the workers; meaningful if {@link #held}.
   */
  private volatile long workersUntil;

  private volatile boolean held;

  FdRequestRouting(
      boolean onLoop, long maxNanos, long backoffNanos, LongSupplier nanoClock, LongAdder moves) {
    this.onLoop = onLoop;
    this.moves = moves;
    this.maxNanos = maxNanos;
    this.backoffNanos = backoffNanos;
    this.nanoClock = nanoClock;
  }

  /** From the shim's configuration, on {@link System#nanoTime()}, counting moves in metrics. */
  static FdRequestRouting from(ShimConfig config, ShimMetrics metrics) {
    return new FdRequestRouting(
        config.fdRequestsOnEventLoop,
        TimeUnit.MILLISECONDS.toNanos(config.fdRequestsLoopMaxMs),
        TimeUnit.MILLISECONDS.toNanos(config.fdRequestsLoopBackoffMs),
        System::nanoTime,
        metrics.fdRequestsMovedToWorkers);
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

  /**
   * An fd request served on an event loop took {@code nanos} to handle (files opened, answered).
   */
  void servedOnEventLoop(long nanos) {
    if (nanos <= maxNanos) {
      return;
    }
    workersUntil = nanoClock.getAsLong() + backoffNanos;
    held = true;
    moves.increment();
    String message =
        "An fd request took {} ms on a shim event loop (over scr.shim.fd.requests.loop.max.ms={}:"
            + " a disk read, or the dataset's lock held); fd requests go to the worker threads"
            + " for {} s so that the loop's other connections do not wait on this disk. A DataNode"
            + " whose storage is often this slow can set scr.shim.fd.requests.on.event.loop=false"
            + " (counted in fd_requests_moved_to_workers)";
    Object[] args = {
      TimeUnit.NANOSECONDS.toMillis(nanos),
      TimeUnit.NANOSECONDS.toMillis(maxNanos),
      TimeUnit.NANOSECONDS.toSeconds(backoffNanos)
    };
    if (logged.compareAndSet(false, true)) {
      LOG.info(message, args);
    } else {
      LOG.debug(message, args);
    }
  }

  /** How many times slow fd requests moved serving to the workers. */
  long movesToWorkers() {
    return moves.sum();
  }
}
