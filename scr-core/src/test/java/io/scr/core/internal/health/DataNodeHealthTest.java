package io.scr.core.internal.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.net.LivenessProbe;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import io.scr.testing.LogCapture;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.log4j.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The health state machine of one DataNode socket, its deadline, and the probe that notices a
 * DataNode answering again: on a fake clock and a scheduler the test runs by hand, against fake
 * DataNode sockets that accept and do not answer until told to.
 */
class DataNodeHealthTest {
  @TempDir Path dir;

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final List<Long> delays = new ArrayList<>();
  private final List<Runnable> due = new ArrayList<>();
  private final LivenessProbe probe = new LivenessProbe();
  private final LogCapture log = LogCapture.of("io.scr.core.internal.health", Level.INFO);

  /** Floor 50 ms, cap 150 ms, 10x p99, a probe every 100 ms. */
  private DataNodeHealth health;

  @BeforeEach
  void setUp() {
    health =
        new DataNodeHealth(
            HealthPolicy.of(50, 150, 10, 100),
            now::get,
            (task, delayNanos) -> {
              due.add(task);
              delays.add(delayNanos);
            },
            probe);
  }

  @AfterEach
  void tearDown() {
    probe.close();
    log.close();
  }

  /** Runs the one probe that is due, as the scheduler's thread would. */
  private void runDueProbe() {
    assertEquals(1, due.size(), "exactly one probe is scheduled");
    Runnable task = due.remove(0);
    task.run();
  }

  /**
   * Runs due probes until the path is healthy (a loaded test machine may take longer than the 150
   * ms deadline to start the fake's threads; the state machine is the same).
   */
  private void probeUntilHealthy(PathHealth h) {
    for (int i = 0; i < 100 && h.state() != HealthState.HEALTHY; i++) {
      runDueProbe();
    }
    assertEquals(HealthState.HEALTHY, h.state());
    assertTrue(due.isEmpty(), "no probe once healthy");
  }

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  @Test
  void aWaitOfTheWholeDeadlineMakesItSuspectASecondUnresponsiveWithOneWarnAndAnAnswerOneInfo() {
    String path = dir.resolve("dn.sock").toString();
    PathHealth h = health.of(path);
    assertEquals(HealthState.HEALTHY, h.state());
    assertTrue(health.admitsNewOpens(path));
    assertTrue(due.isEmpty(), "no probe while healthy");

    h.timedOut("op 87");
    assertEquals(HealthState.SUSPECT, h.state());
    assertFalse(health.admitsNewOpens(path), "a suspect DataNode gets no new opens");
    assertEquals(1, due.size(), "leaving healthy schedules a probe");
    assertEquals(0L, delays.get(0), "at once");

    h.timedOut("op 87");
    h.timedOut("op 87");
    assertEquals(HealthState.UNRESPONSIVE, h.state());
    assertEquals(1, due.size(), "one probe per path, however many failures");
    assertEquals(1, log.matching("WARN", "does not answer within").size(), log.all().toString());

    now.addAndGet(8_000 * MS);
    h.answered(300_000);
    assertEquals(HealthState.HEALTHY, h.state());
    assertTrue(health.admitsNewOpens(path));
    assertEquals(
        1,
        log.matching("INFO", "after 8000 ms unresponsive").size(),
        "one INFO on recovery: " + log.all());

    HealthStatus s = h.status();
    assertEquals(3, s.transitions());
    assertEquals(1, s.transitionsTo(HealthState.SUSPECT));
    assertEquals(1, s.transitionsTo(HealthState.UNRESPONSIVE));
    assertEquals(1, s.transitionsTo(HealthState.HEALTHY));
  }

  @Test
  void refusalIsDeadAResetIsSuspectAndEitherHealsOnAnAnswer() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    h.faltered("connection reset");
    assertEquals(HealthState.SUSPECT, h.state());
    h.refused("connection refused");
    assertEquals(HealthState.DEAD, h.state());
    assertTrue(
        health.admitsNewOpens(h.path()),
        "a connect fails at once: the connect backoff, not the health, holds opens back");
    assertEquals(1, log.matching("WARN", "is not running").size(), log.all().toString());
    h.faltered("a segment closed");
    assertEquals(HealthState.DEAD, h.state(), "a softer sign does not undo a harder one");
    h.timedOut("accepts again but does not answer");
    assertEquals(HealthState.UNRESPONSIVE, h.state());
    h.answered(100_000);
    assertEquals(HealthState.HEALTHY, h.state());
  }

  @Test
  void theDeadlineIsTenTimesTheRecentP99WithinTheFloorAndTheCap() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    assertEquals(50, h.deadlineMillis(), "the floor until the DataNode has answered enough");
    for (int i = 0; i < PathHealth.MIN_SAMPLES; i++) {
      h.answered(MS); // 1 ms answers: 10 ms, floored
    }
    assertEquals(50, h.deadlineMillis());
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(12 * MS);
    }
    assertEquals(120, h.deadlineMillis(), "10 x p99");
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(40 * MS);
    }
    assertEquals(150, h.deadlineMillis(), "capped");
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(2 * MS);
    }
    assertEquals(50, h.deadlineMillis(), "recent answers only");
  }

  @Test
  void aDataNodeFoundDeadIsANewProcessWhenItAnswersAgainAndItsDeadlineIsLearnedAnew() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(12 * MS);
    }
    assertEquals(120, h.deadlineMillis(), "learned from the process that answered");

    h.refused("connection refused"); // kill -9: the socket file left behind, nobody listens

    assertEquals(HealthState.DEAD, h.state());
    assertEquals(
        50, h.deadlineMillis(), "a restarted DataNode, still warming up, is held to the floor");
    h.answered(2 * MS);
    assertEquals(HealthState.HEALTHY, h.state());
    assertEquals(50, h.deadlineMillis(), "the floor until the new process has answered enough");
  }

  @Test
  void aDataNodeSlowFromItsFirstAnswerIsHeldToTheFloorAndNotLearnedAsNormal() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    assertEquals(50, h.deadlineMillis(), "the floor until the DataNode has answered enough");
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(60 * MS); // slower than the 50 ms floor, faster than the 150 ms cap
      h.probeAnswered();
    }
    assertEquals(50, h.deadlineMillis(), "answers slower than the floor do not raise the deadline");
    h.answered(60 * MS);
    assertEquals(HealthState.SUSPECT, h.state(), "an answer slower than the floor is suspect");
  }

  @Test
  void aDataNodeThatTurnsSlowIsSuspectAndItsOpensWaitOnlyTheFloorOnceItRelapses() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    for (int i = 0; i < PathHealth.WINDOW; i++) {
      h.answered(9 * MS); // a loaded machine's normal answers
    }
    assertEquals(90, h.deadlineMillis(), "10 x p99 of the normal answers");

    h.answered(80 * MS); // slow, within the deadline: used, but suspect
    assertEquals(HealthState.SUSPECT, h.state());
    assertEquals(50, h.deadlineMillis(), "after a slow answer, its next opens wait only the floor");
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state());

    h.answered(80 * MS); // slow again right after the probe: a relapse
    assertEquals(HealthState.SUSPECT, h.state());
    assertEquals(50, h.deadlineMillis(), "a relapsing DataNode's opens wait only the floor");

    now.addAndGet(200 * MS);
    h.probeAnswered();
    h.answered(3 * MS); // normal again
    assertEquals(HealthState.HEALTHY, h.state());
    assertEquals(90, h.deadlineMillis(), "a normal answer restores the learned deadline");
  }

  @Test
  void aDataNodeThatAnswersProbesButNotRequestsStaysOutLongerEachTimeARequestSuspectsItAgain() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    h.timedOut("op 87");
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state(), "the first probe answer counts at once");

    h.timedOut("op 87 again, right after the probe"); // relapse 1: out for 2 x 100 ms
    h.probeAnswered();
    assertEquals(HealthState.SUSPECT, h.state(), "a relapsed DataNode is held out");
    now.addAndGet(199 * MS);
    h.probeAnswered();
    assertEquals(HealthState.SUSPECT, h.state());
    now.addAndGet(MS);
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state(), "after 200 ms");

    h.timedOut("op 87 a third time"); // relapse 2: 400 ms
    now.addAndGet(399 * MS);
    h.probeAnswered();
    assertEquals(HealthState.SUSPECT, h.state());
    now.addAndGet(MS);
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state(), "after 400 ms");

    for (int i = 0; i < 20; i++) {
      h.timedOut("op 87");
      now.addAndGet(PathHealth.MAX_RELAPSE_HOLD_NANOS);
      h.probeAnswered();
    }
    assertEquals(HealthState.HEALTHY, h.state(), "the hold is capped");

    h.answered(MS); // a request answered in time: a fresh start
    h.timedOut("op 87");
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state(), "no hold after a request answered in time");
  }

  @Test
  void backOnAProbesWordItLetsOneRequestThroughAtATimeUntilOneIsAnsweredWithinTheFloor()
      throws Exception {
    String path = dir.resolve("dn.sock").toString();
    PathHealth h = health.of(path);
    assertTrue(health.beginRequest(path), "healthy: every thread");
    health.endRequest(path);
    h.timedOut("op 87");
    assertFalse(health.admitsNewOpens(path), "suspect: nobody");
    h.probeAnswered();
    assertEquals(HealthState.HEALTHY, h.state());
    assertTrue(health.onTrial(path));

    assertTrue(health.admitsNewOpens(path), "asking takes nothing");
    assertTrue(onOtherThread(() -> health.admitsNewOpens(path)));
    assertTrue(health.beginRequest(path), "the first thread to send tests it");
    assertTrue(health.admitsNewOpens(path), "and passes every later check of its open");
    assertFalse(health.unwell(path), "its own stock read may choose it");
    assertFalse(onOtherThread(() -> health.admitsNewOpens(path)), "another thread waits its turn");
    assertFalse(onOtherThread(() -> health.beginRequest(path)));
    assertTrue(onOtherThread(() -> health.unwell(path)), "and steers its stock reads elsewhere");

    health.endRequest(path); // its request ended with no answer within the floor (a refusal, say)
    assertTrue(health.onTrial(path), "still on trial");
    assertTrue(onOtherThread(() -> health.beginRequest(path)), "the next thread tests it");
    assertFalse(health.beginRequest(path), "while that one holds it");

    now.addAndGet(2 * h.deadlineNanos());
    assertTrue(
        health.beginRequest(path),
        "a trial that reported nothing for twice the deadline passes to the next thread");

    h.answered(MS); // that request was answered within the floor
    assertFalse(health.onTrial(path));
    assertTrue(onOtherThread(() -> health.beginRequest(path)), "every thread again");
    assertFalse(onOtherThread(() -> health.unwell(path)));
  }

  private static boolean onOtherThread(java.util.concurrent.Callable<Boolean> c) throws Exception {
    java.util.concurrent.ExecutorService e =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      return e.submit(c).get();
    } finally {
      e.shutdownNow();
    }
  }

  @Test
  void aProbeWaitsOnOneRequestWhileTheDataNodeHangsAndSeesItsAnswerWhenItResumes()
      throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.hung(dir.resolve("dn.sock"))) {
      PathHealth h = health.of(dn.path());
      h.timedOut("op 87");
      runDueProbe(); // waits the deadline (150 ms, no answers yet): no answer
      assertEquals(HealthState.UNRESPONSIVE, h.state());
      assertEquals(1, due.size(), "probed again while not healthy");
      assertEquals(TimeUnit.MILLISECONDS.toNanos(100), (long) delays.get(1), "after the interval");
      runDueProbe();
      assertEquals(HealthState.UNRESPONSIVE, h.state());
      assertEquals(1, dn.connections(), "the second probe waits on the first one's request");
      assertEquals(1, dn.requests(88), "a stock op 88, sent once");

      dn.resume();
      probeUntilHealthy(h); // the queued request's answer heals it
      assertEquals(1, dn.requests(88), "no second request: the answer to the first was awaited");
      assertEquals(1, dn.connections());
      assertEquals(0, dn.requests(87), "a probe asks for no replica");
    }
  }

  @Test
  void aMissingSocketIsDeadAndTheProbeSeesANewDataNodeBindIt() throws Exception {
    Path sock = dir.resolve("dn.sock");
    PathHealth h = health.of(sock.toString());
    h.timedOut("op 87");
    runDueProbe();
    assertEquals(HealthState.DEAD, h.state(), "no socket file: nobody listens");
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.answering(sock)) {
      probeUntilHealthy(h);
    }
  }

  @Test
  void aDataNodeNoReadAsksAboutIsNotProbedForEverAndTheNextReadStartsItAgain() throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.hung(dir.resolve("dn.sock"))) {
      PathHealth h = health.of(dn.path());
      h.timedOut("op 87");
      runDueProbe();
      assertEquals(HealthState.UNRESPONSIVE, h.state());
      assertEquals(1, due.size(), "probed on while a read asked recently");
      now.addAndGet(TimeUnit.SECONDS.toNanos(DataNodeHealth.PROBE_WHILE_ASKED_SECONDS + 1));
      runDueProbe();
      assertTrue(due.isEmpty(), "nobody asked for 6 s: the probe stops");
      assertFalse(health.admitsNewOpens(dn.path()), "still unresponsive as far as anyone knows");
      assertEquals(1, due.size(), "a read that asks starts the probe again");
      assertFalse(health.admitsNewOpens(dn.path()));
      assertEquals(1, due.size(), "one probe per path");
    }
  }

  @Test
  void aPeerThatAdvertisedPingIsProbedWithPing() throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.answering(dir.resolve("dn.sock"))) {
      health.offersPing(dn.path(), true);
      health.of(dn.path()).faltered("a segment closed");
      probeUntilHealthy(health.of(dn.path()));
      assertTrue(dn.requests(127) >= 1, "op 127 PING");
      assertEquals(0, dn.requests(88));
    }
  }
}
