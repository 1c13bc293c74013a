package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.FailureClass;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
    BackoffStatus s =
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

  /**
   * A DataNode down for a rolling restart meets doubled backoffs; once it binds its socket again (a
   * new socket file) every backoff of the path ends within one probe interval, so the stream that
   * was open across the restart short-circuits again at once.
   */
  @Test
  void aSocketFileBoundAgainEndsEveryBackoffOfItsPath(@TempDir Path dir) throws Exception {
    PathBackoff b = backoff();
    Path file = dir.resolve("dn.sock");
    String sock = file.toString();
    for (int i = 0; i < 4; i++) {
      b.recordFailure(sock, FailureClass.CONNECT, "No such file or directory"); // 16 s
    }
    b.recordFailure(sock, FailureClass.SHM, "connect failed");
    assertTrue(b.isBackingOff(sock));
    Files.createFile(file); // the DataNode bound its socket again
    assertTrue(b.isBackingOff(sock), "the file is looked at no more often than every 100 ms");
    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(PathBackoff.PROBE_MILLIS));
    assertFalse(b.isBackingOff(sock), "a new socket file ends the backoff");
    assertFalse(b.isBackingOff(sock, FailureClass.SHM), "every class of the path");
    assertTrue(
        b.snapshot().stream()
            .filter(x -> x.failureClass() == FailureClass.CONNECT)
            .allMatch(x -> x.lastReason().contains("ended early")),
        "the status says why");

    // A dead DataNode's stale socket file ends nothing: only a different file does.
    b.recordFailure(sock, FailureClass.CONNECT, "Connection refused");
    for (int i = 0; i < 5; i++) {
      now.addAndGet(TimeUnit.MILLISECONDS.toNanos(PathBackoff.PROBE_MILLIS));
      assertTrue(b.isBackingOff(sock), "the same file after " + (i + 1) + " probes");
    }
    Files.delete(file);
    Files.createFile(file);
    Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() + 5_000));
    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(PathBackoff.PROBE_MILLIS));
    assertFalse(b.isBackingOff(sock), "bound again");
    assertEquals(
        TimeUnit.SECONDS.toNanos(60), // consecutive failures still count (capped) until a success
        b.recordFailure(sock, FailureClass.CONNECT, "refused again"));
  }
}
