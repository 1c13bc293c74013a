package io.scr.cache;

/**
 * The cache's only source of time: idle expiry, the thrash detector's windows, load times and how
 * long a load waits for fd budget. Inject a fake in tests instead of sleeping. Implementations must
 * be thread-safe and monotonic.
 */
@FunctionalInterface
public interface Ticker {

  /** Returns the current time in nanoseconds, from an arbitrary origin. */
  long read();

  /** Returns the ticker backed by {@link System#nanoTime()}. */
  static Ticker systemTicker() {
    return System::nanoTime;
  }
}
