package io.scr.core.internal.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.net.LivenessProbe;
import io.scr.core.internal.net.ShortCircuitRefusedException;
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

  /**
   * Readers wait the deadline but no more than the read wait. A reader's request that outwaits it
   * changes no state: it starts one check (a probe bounded by the whole deadline) during which no
   * open is admitted; a DataNode that answers the check is busy, not unwell (healthy, on trial: the
   * outwaited request is sent as the trial at once); one that lets the check wait the deadline is
   * suspect, and a probe after that unresponsive.
   */
  @Test
  void aReadersShorterWaitStartsACheckThatOnlyAWaitOfTheWholeDeadlineTurnsIntoSuspicion()
      throws Exception {
    DataNodeHealth patient =
        new DataNodeHealth(
            HealthPolicy.of(50, 150, 10, 100, 20),
            now::get,
            (task, delayNanos) -> {
              due.add(task);
              delays.add(delayNanos);
            },
            probe);
    java.net.SocketTimeoutException timeout = new java.net.SocketTimeoutException("read");
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.answering(dir.resolve("busy.sock"))) {
      String path = dn.path();
      PathHealth h = patient.of(path);
      assertEquals(20, patient.deadlineMillis(path), "a reader waits the read wait");
      assertEquals(50, h.deadlineMillis(), "probes and the trial wait the whole deadline");
      java.util.concurrent.atomic.AtomicInteger trials =
          new java.util.concurrent.atomic.AtomicInteger();
      patient.lastRequest(path, deadlineMs -> trials.incrementAndGet());
      for (int i = 0; i < 4; i++) {
        assertTrue(patient.requestFailed(path, timeout, 20 * MS), "a wait, counted as one");
      }
      assertEquals(HealthState.HEALTHY, h.state(), "a reader's shorter wait changes no state");
      assertFalse(patient.admitsNewOpens(path), "no open while the check runs");
      assertTrue(patient.unwell(path), "stock reads prefer another replica meanwhile");
      runDueProbe(); // the check: answered
      assertEquals(1, trials.get(), "the outwaited request sent as the trial at once");
      assertTrue(patient.admitsNewOpens(path), "busy, not unwell: opens asked for again");
      assertEquals(0, h.status().transitions(), "no health change for a DataNode that answers");
    }
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.hung(dir.resolve("hung.sock"))) {
      String path = dn.path();
      PathHealth h = patient.of(path);
      patient.requestFailed(path, timeout, 20 * MS);
      assertEquals(HealthState.HEALTHY, h.state());
      runDueProbe(); // the check waits the deadline unanswered
      assertEquals(HealthState.SUSPECT, h.state(), "a check unanswered for the whole deadline");
      runDueProbe(); // the probe that follows
      assertEquals(HealthState.UNRESPONSIVE, h.state(), "a second wait of the whole deadline");
    }
  }

  @Test
  void refusalIsDeadAResetIsSuspectAndEitherHealsOnAnAnswer() {
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    h.faltered("connection reset");
    assertEquals(HealthState.SUSPECT, h.state());
    h.refused("connection refused");
    assertEquals(HealthState.DEAD, h.state());
    assertFalse(
        health.admitsNewOpens(h.path()),
        "a DataNode that starts again accepts before it answers: no reader asks until a probe"
            + " and a trial are answered");
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
  void backOnAProbesWordNoReaderSendsARequestAndOneTrialOffTheReadPathDecides() {
    String path = dir.resolve("dn.sock").toString();
    PathHealth h = health.of(path);
    assertTrue(health.admitsRequests(path), "healthy: every thread sends");
    assertFalse(health.offerTrial(path, deadlineMs -> {}), "no trial while healthy");
    h.refused("connection refused"); // kill -9
    assertFalse(health.admitsNewOpens(path), "dead: nobody");
    due.clear();
    h.probeAnswered(); // the DataNode started again and answers probes
    assertEquals(HealthState.HEALTHY, h.state());
    assertTrue(health.onTrial(path));
    assertFalse(health.admitsRequests(path), "no request on a reader's thread");
    assertTrue(health.unwell(path), "stock reads are steered elsewhere");
    assertTrue(health.admitsNewOpens(path), "an open goes on to offer its request as the trial");

    List<Integer> sent = new ArrayList<>();
    assertTrue(health.offerTrial(path, deadlineMs -> sent.add(deadlineMs)));
    assertFalse(health.offerTrial(path, deadlineMs -> sent.add(-1)), "one trial at a time");
    assertFalse(health.admitsNewOpens(path), "a trial queued: later opens go stock at once");
    assertTrue(sent.isEmpty(), "nothing is sent on the offering thread");
    assertEquals(1, due.size());
    assertEquals(0L, (long) delays.get(delays.size() - 1), "sent at once");

    runDueProbe(); // the scheduler's thread sends it; answered at once
    assertEquals(List.of(50), sent, "bounded by the path's deadline (the floor after a restart)");
    assertFalse(health.onTrial(path), "answered within the floor: the trial is over");
    assertTrue(health.admitsRequests(path), "every thread sends again");
    assertFalse(health.unwell(path));
  }

  @Test
  void theProbeThatFindsTheDataNodeAnsweringSendsTheLastOpensRequestAsTheTrialAtOnce()
      throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.answering(dir.resolve("dn.sock"))) {
      PathHealth h = health.of(dn.path());
      List<Integer> sent = new ArrayList<>();
      health.lastRequest(dn.path(), deadlineMs -> sent.add(deadlineMs));
      h.refused("connection refused"); // kill -9; the DataNode is already back
      probeUntilHealthy(h);
      assertEquals(List.of(50), sent, "the last open's request, sent by the probe's thread");
      assertFalse(health.onTrial(dn.path()), "answered within the floor: no reader is needed");
      assertTrue(health.admitsRequests(dn.path()));
    }
  }

  @Test
  void aTrialThatWaitsTheDeadlineOrIsAnsweredLateMakesThePathSuspectAtNoReadersCost() {
    String path = dir.resolve("dn.sock").toString();
    PathHealth h = health.of(path);
    h.refused("connection refused");
    due.clear();
    h.probeAnswered();
    assertTrue(
        health.offerTrial(
            path,
            deadlineMs -> {
              now.addAndGet(deadlineMs * MS);
              throw new java.net.SocketTimeoutException("Resource temporarily unavailable");
            }));
    runDueProbe();
    assertEquals(HealthState.SUSPECT, h.state(), "a trial that timed out: suspect again");
    assertFalse(health.admitsNewOpens(path));

    due.clear();
    now.addAndGet(TimeUnit.SECONDS.toNanos(6)); // past the relapse hold
    h.probeAnswered();
    assertTrue(health.onTrial(path));
    assertTrue(health.offerTrial(path, deadlineMs -> now.addAndGet(60 * MS)));
    runDueProbe();
    assertEquals(HealthState.SUSPECT, h.state(), "answered after more than the floor: suspect");

    due.clear();
    now.addAndGet(TimeUnit.SECONDS.toNanos(6));
    h.probeAnswered();
    assertTrue(
        health.offerTrial(
            path,
            deadlineMs -> {
              now.addAndGet(MS);
              throw ShortCircuitRefusedException.rememberedAbsent("no such replica");
            }));
    runDueProbe();
    assertEquals(HealthState.HEALTHY, h.state(), "a refusal within the floor is an answer");
    assertFalse(health.onTrial(path));
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
  void aDeadDataNodeIsProbedForAMinuteAfterTheLastAskSoARestartIsSeenWithoutAReader()
      throws Exception {
    Path sock = dir.resolve("dn.sock");
    PathHealth h = health.of(sock.toString());
    h.refused("connection refused"); // readers ride it out on open replicas: nobody asks
    now.addAndGet(TimeUnit.SECONDS.toNanos(DataNodeHealth.PROBE_WHILE_ASKED_SECONDS + 1));
    runDueProbe();
    assertEquals(HealthState.DEAD, h.state());
    assertEquals(1, due.size(), "still probed 6 s after the last ask: it is dead, not hung");
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.answering(sock)) {
      probeUntilHealthy(h); // started again: seen by the probe, no read needed
    }
    h.refused("connection refused");
    now.addAndGet(TimeUnit.SECONDS.toNanos(DataNodeHealth.PROBE_WHILE_DEAD_SECONDS + 1));
    runDueProbe();
    assertTrue(due.isEmpty(), "nobody asked for a minute: the probe stops");
  }

  @Test
  void whenTheLastEngineClosesNothingIsProbedAnyMore() throws Exception {
    DataNodeHealth.Registration first = health.onRecovery(path -> {});
    DataNodeHealth.Registration second = health.onRecovery(path -> {});
    PathHealth h = health.of(dir.resolve("dn.sock").toString());
    h.refused("connection refused");
    runDueProbe();
    assertEquals(1, due.size(), "dead and an engine open: probed on");
    first.close();
    runDueProbe();
    assertEquals(1, due.size(), "one engine still open: probed on");
    second.close();
    runDueProbe();
    assertTrue(due.isEmpty(), "no engine left: the probe stops (its thread ends)");
    health.onRecovery(path -> {});
    assertFalse(health.admitsNewOpens(h.path()), "still dead for an engine made later");
    assertEquals(1, due.size(), "a later engine's ask starts probing again");
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
