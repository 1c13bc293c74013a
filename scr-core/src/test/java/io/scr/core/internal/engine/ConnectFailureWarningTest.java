package io.scr.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.testing.LogCapture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A socket the client cannot connect to is a configuration problem, so the read path logs it: one
 * WARN per path per streak of failures, with the remedy for the error the connect returned. Before,
 * connect failures on the read path were recorded for the backoff but never logged (reads fell back
 * to TCP silently), and the only message, from the segment fetcher, said "the socket file does not
 * exist" also when the directory could not be traversed.
 */
class ConnectFailureWarningTest {
  @TempDir Path dir;

  private final long[] now = {0};

  private Engine engine(String socket, String context) {
    Configuration c = new Configuration(false);
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.set("scr.client.socket.paths", socket);
    // No slot pool: its allocation waits on the ticker, which this test drives by hand.
    c.setBoolean("scr.shm.enabled", false);
    return new Engine(c, context, () -> now[0]);
  }

  private static ReplicaLease lease(Engine scr, long blockId) throws IOException {
    return scr.leaseFromLocalDataNode(
        new ExtendedBlock("BP-1", blockId, 1024, 1), new Token<BlockTokenIdentifier>(), "/f");
  }

  private static boolean isRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | RuntimeException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  @Test
  void aMissingSocketIsOneWarningPerStreakNamingTheSocketPathKey() throws IOException {
    String socket = dir.resolve("dn_socket").toString();
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = engine(socket, "connect-missing")) {
      assertNull(lease(scr, 1), "no DataNode: the read falls back");
      List<String> lines = warnings.matching("fall back to TCP");
      assertEquals(1, lines.size(), warnings.all().toString());
      String line = lines.get(0);
      assertTrue(line.startsWith("WARN"), line);
      assertTrue(line.contains(socket), line);
      assertTrue(line.contains("no such socket: is the DataNode running with"), line);
      assertFalse(line.contains("permission denied"), line);
      // Retries after each backoff fail the same way: the streak is logged once.
      for (int i = 0; i < 5; i++) {
        now[0] += TimeUnit.MINUTES.toNanos(2);
        assertNull(lease(scr, 2 + i));
      }
      assertEquals(1, warnings.matching("fall back to TCP").size(), warnings.all().toString());
      // Each retry tried the socket, or the DataNode's health (dead since the first failure)
      // answered for it without a connect: either way the same streak.
      long tried =
          scr.backoffStatus().stream()
              .filter(s -> s.path().equals(socket))
              .mapToLong(s -> s.failures())
              .sum();
      assertTrue(
          tried >= 1 && tried + scr.fallbackCount(FallbackReason.DATANODE_UNHEALTHY) >= 6,
          "every retry failed on the socket or its health: " + scr.backoffStatus());
      for (String l : warnings.matching(socket)) {
        assertFalse(l.contains("does not exist"), "no message blames a missing file wrongly: " + l);
      }
    }
  }

  @Test
  void aDirectoryTheClientCannotTraverseSaysPermissionDenied() throws IOException {
    Assumptions.assumeFalse(
        isRoot(),
        "running as root: permission bits do not stop root from reaching the socket; the"
            + " EACCES hint is checked on the error text in net.ConnectHintTest");
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    Files.createFile(sockets.resolve("dn_socket"));
    Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("---------"));
    String socket = sockets.resolve("dn_socket").toString();
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = engine(socket, "connect-denied")) {
      assertNull(lease(scr, 1));
      List<String> lines = warnings.matching("fall back to TCP");
      assertEquals(1, lines.size(), warnings.all().toString());
      assertTrue(
          lines.get(0).contains("permission denied: the client user cannot reach the socket"),
          lines.get(0));
    } finally {
      Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("rwx------"));
    }
  }
}
