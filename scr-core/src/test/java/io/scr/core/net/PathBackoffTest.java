package io.scr.core.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class PathBackoffTest {
  private final AtomicLong now = new AtomicLong(1_000);

  private PathBackoff backoff() {
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    base.put(FailureClass.CONNECT, 2);
    base.put(FailureClass.UNSUPPORTED, 10);
    base.put(FailureClass.IO, 2);
    base.put(FailureClass.SHM, 60);
    return new PathBackoff(now::get, base, 60);
  }

  private void advanceSeconds(long s) {
    now.addAndGet(TimeUnit.SECONDS.toNanos(s));
  }

  @Test
  void failuresBackOffPerClassDoublingUpToTheMaximumAndSuccessResets() {
    PathBackoff b = backoff();
    assertFalse(b.isBackingOff("/p"));
    assertEquals(
        TimeUnit.SECONDS.toNanos(2), b.recordFailure("/p", FailureClass.CONNECT, "refused"));
    assertTrue(b.isBackingOff("/p"));
    assertFalse(b.isBackingOff("/q"), "other paths are unaffected");
    advanceSeconds(2);
    assertFalse(b.isBackingOff("/p"));
    assertEquals(
        TimeUnit.SECONDS.toNanos(4), b.recordFailure("/p", FailureClass.CONNECT, "refused"));
    for (int i = 0; i < 10; i++) {
      b.recordFailure("/p", FailureClass.CONNECT, "refused " + i);
    }
    advanceSeconds(59);
    assertTrue(b.isBackingOff("/p"));
    advanceSeconds(1);
    assertFalse(b.isBackingOff("/p"), "never longer than the maximum");
    b.recordSuccess("/p");
    assertEquals(TimeUnit.SECONDS.toNanos(2), b.recordFailure("/p", FailureClass.CONNECT, "again"));
    PathBackoff.Status s =
        b.snapshot().stream()
            .filter(x -> x.failureClass() == FailureClass.CONNECT)
            .findFirst()
            .get();
    assertEquals(13, s.failures());
    assertEquals(1, s.consecutiveFailures());
    assertEquals("again", s.lastReason());
  }

  @Test
  void unsupportedUsesItsOwnDurationAndShmDoesNotDisableThePath() {
    PathBackoff b = backoff();
    b.recordFailure("/p", FailureClass.SHM, "no shm");
    assertFalse(b.isBackingOff("/p"), "SHM only stops slot use");
    assertTrue(b.isBackingOff("/p", FailureClass.SHM));
    b.recordFailure("/p", FailureClass.UNSUPPORTED, "fd passing not configured");
    advanceSeconds(9);
    assertTrue(b.isBackingOff("/p"));
    advanceSeconds(1);
    assertFalse(b.isBackingOff("/p"));
    assertTrue(b.isBackingOff("/p", FailureClass.SHM));
  }
}
