package io.scr.shim;

/**
 * The shim's source of nanosecond time: request latencies and fd-passing phases, the write
 * deadline, the fd-request routing's backoff and the invalidation scan's pacing. The plugin passes
 * {@link #SYSTEM}; tests pass a fake and move it instead of sleeping. (A connection's timers run on
 * its event loop's scheduler; the once-a-minute log throttles, shared by every connection, read
 * {@link #SYSTEM}.)
 *
 * <p>Implementations must be thread-safe (event loops, workers and the control thread read it) and
 * monotonic; only differences between readings mean anything.
 */
@FunctionalInterface
interface Ticker {
  /** {@link System#nanoTime()}. */
  Ticker SYSTEM = System::nanoTime;

  /** The current time in nanoseconds from an arbitrary origin. */
  long read();
}
