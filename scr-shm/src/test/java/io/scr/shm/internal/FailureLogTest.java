package io.scr.shm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** A background loop that fails on every pass logs once per streak, then once a minute. */
class FailureLogTest {
  private final List<String> lines = new ArrayList<>();

  /** A logger that records "level:first argument" per call. */
  private final Logger log =
      (Logger)
          Proxy.newProxyInstance(
              Logger.class.getClassLoader(),
              new Class<?>[] {Logger.class},
              (proxy, method, args) -> {
                if (method.getName().startsWith("is")) {
                  return true;
                }
                if (method.getReturnType() == void.class) {
                  lines.add(method.getName() + ":" + args[0]);
                  return null;
                }
                return method.getName().equals("getName") ? "test" : null;
              });

  @Test
  void aFailingLoopLogsOncePerStreakAndOnceAMinuteAndPausesLonger() {
    FailureLog failures = new FailureLog();
    long now = 0;
    long max = TimeUnit.SECONDS.toNanos(1);
    List<Long> pauses = new ArrayList<>();
    // 10 ms apart for 59 s: as the maintenance loop used to, but it logged every pass
    for (int i = 0; i < 5900; i++) {
      pauses.add(failures.failed(log, "loop", new OutOfMemoryError("x"), now, max));
      now += TimeUnit.MILLISECONDS.toNanos(10);
    }
    assertEquals(1, lines.size(), "one line for the whole first minute: " + lines.size());
    assertEquals(TimeUnit.MILLISECONDS.toNanos(10), pauses.get(0));
    assertEquals(TimeUnit.MILLISECONDS.toNanos(20), pauses.get(1));
    assertEquals(max, pauses.get(pauses.size() - 1), "capped");
    now += TimeUnit.SECONDS.toNanos(2);
    failures.failed(log, "loop", new OutOfMemoryError("x"), now, max);
    assertEquals(2, lines.size(), "then one line a minute: " + lines);

    failures.succeeded(log, "loop");
    assertEquals(3, lines.size(), "recovery is said once: " + lines);
    failures.failed(log, "loop", new InternalError("y"), now, max);
    assertEquals(4, lines.size(), "a new streak is logged in full: " + lines);
    assertEquals(
        "error:{} failed; it keeps running and retries (repeats are logged once a minute)",
        lines.get(3));
  }
}
