package io.scr.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.FallbackReason;
import io.scr.core.internal.health.FakeDataNodeSocket;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local DataNode that accepts connections and does not answer (SIGSTOP, a long GC pause), as the
 * engine sees it: a replica open waits the health deadline (at most 500 ms by default), not the
 * socket timeout (30 s here); later opens are not tried at all while it hangs, in every engine of
 * the process; the probe notices when it answers again.
 */
class LocalDataNodeHealthTest {
  /** The socket timeout these engines have: what a replica open would cost without the deadline. */
  private static final int SOCKET_TIMEOUT_MS = 30_000;

  @TempDir Path dir;

  private static Configuration conf(String context, String socketPath) {
    Configuration c = new Configuration(false);
    c.set("scr.client.context", context);
    c.set("scr.client.socket.paths", socketPath);
    c.setBoolean("scr.shm.enabled", false);
    c.setBoolean("scr.client.extensions.enabled", false);
    c.setInt("scr.net.read.timeout.ms", SOCKET_TIMEOUT_MS);
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    return c;
  }

  private static ExtendedBlock block(long id) {
    return new ExtendedBlock("BP-health", id, 1024, 1);
  }

  private static final Token<BlockTokenIdentifier> TOKEN = new Token<>();

  private static void awaitHealthy(Engine client, String path) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (client.dataNodeHealth().state(path) != HealthState.HEALTHY) {
      if (System.nanoTime() - deadline > 0) {
        fail("still " + client.dataNodeHealth().state(path) + " 30 s after the DataNode resumed");
      }
      Thread.sleep(10);
    }
  }

  private static void awaitTrialOver(Engine client, String path) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (client.dataNodeHealth().onTrial(path)) {
      if (System.nanoTime() - deadline > 0) {
        fail("the trial request to " + path + " has not ended 30 s after it was offered");
      }
      Thread.sleep(10);
    }
  }

  @Test
  void aHungDataNodeCostsOneDeadlineThenNoRequestUntilItAnswersAProbe() throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.hung(dir.resolve("dn.sock"));
        Engine client = Engine.acquire(conf("health-hung", dn.path()))) {
      long t0 = System.nanoTime();
      assertNull(client.lease(block(1), TOKEN, dn.path(), null, null), "no answer, no replica");
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(
          tookMs < SOCKET_TIMEOUT_MS / 6,
          "the open waited the health deadline, not the socket timeout: " + tookMs + " ms");
      assertEquals(1, client.fallbackCount(FallbackReason.DATANODE_TIMEOUT), "counted, not silent");
      assertNotEquals(HealthState.HEALTHY, client.dataNodeHealth().state(dn.path()));
      assertEquals(0, client.fallbackCount(FallbackReason.IO_ERROR));
      assertTrue(
          client.backoffStatus().stream().allMatch(s -> s.remainingBackoffNanos() == 0),
          "a hang is the health's to judge, not a backoff that outlives it: "
              + client.backoffStatus());

      t0 = System.nanoTime();
      assertNull(client.lease(block(2), TOKEN, dn.path(), null, null));
      assertTrue(
          System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "answered at once, not waited");
      assertEquals(1, client.fallbackCount(FallbackReason.DATANODE_UNHEALTHY));
      assertEquals(1, dn.requests(87), "no fd request to a DataNode that is not healthy");

      HealthStatus published =
          client.metricsSnapshot().health().stream()
              .filter(s -> s.path().equals(dn.path()))
              .findFirst()
              .orElseThrow(() -> new AssertionError("the path's health is in the metrics"));
      assertNotEquals(HealthState.HEALTHY, published.state());
      assertTrue(published.transitions() >= 1);

      dn.resume();
      awaitHealthy(client, dn.path());
      assertNull(
          client.lease(block(3), TOKEN, dn.path(), null, null),
          "back on a probe's word: this open's request is the trial, sent off the read path");
      assertEquals(2, client.fallbackCount(FallbackReason.DATANODE_UNHEALTHY));
      awaitTrialOver(client, dn.path());
      assertEquals(2, dn.requests(87), "the trial asked there (and was refused: an answer)");
      assertNull(
          client.lease(block(4), TOKEN, dn.path(), null, null), "this fake refuses every block");
      assertEquals(3, dn.requests(87), "new opens are asked for there again");
      assertEquals(1, client.fallbackCount(FallbackReason.BLOCK_REFUSED));
    }
  }

  @Test
  void everyEngineOfTheProcessSeesWhatOneLearnt() throws Exception {
    try (FakeDataNodeSocket dn = FakeDataNodeSocket.hung(dir.resolve("dn.sock"));
        Engine first = Engine.acquire(conf("health-first", dn.path()));
        Engine second = Engine.acquire(conf("health-second", dn.path()))) {
      assertSame(first.dataNodeHealth(), second.dataNodeHealth(), "one health per process");
      assertNull(first.lease(block(1), TOKEN, dn.path(), null, null));
      assertEquals(1, first.fallbackCount(FallbackReason.DATANODE_TIMEOUT));

      long t0 = System.nanoTime();
      assertNull(second.lease(block(2), TOKEN, dn.path(), null, null));
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "at once");
      assertEquals(1, second.fallbackCount(FallbackReason.DATANODE_UNHEALTHY));
      assertEquals(0, second.fallbackCount(FallbackReason.DATANODE_TIMEOUT));
      assertEquals(1, dn.requests(87), "the second engine never asked the hung DataNode");
      dn.resume();
    }
  }
}
