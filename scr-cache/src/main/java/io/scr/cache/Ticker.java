package io.scr.cache;

/**
 * A source of nanosecond time for idle expiry and the thrash detector's windows. Inject a fake in
 * tests instead of sleeping. Implementations must be thread-safe and monotonic.
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
