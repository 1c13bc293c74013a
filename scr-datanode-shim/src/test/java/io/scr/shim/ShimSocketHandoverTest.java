package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A DataNode that starts while another still holds the socket path (a restart whose old process is
 * slow to exit) takes the path over in one step, and the old one's shutdown leaves the new one's
 * socket in place: clients keep reaching the DataNode that serves.
 */
class ShimSocketHandoverTest {
  private static final int MAX = Integer.MAX_VALUE;

  /** A delimited {@code BlockOpResponseProto{status: SUCCESS}}. */
  private static final byte[] PONG = {2, 8, 0};

  @TempDir Path dir;

  @Test
  void aServerStoppingAfterItsSuccessorStartedLeavesTheSuccessorsSocket() throws Exception {
    Path socket = dir.resolve("dn.sock");
    Server old = new Server(socket);
    Server successor = null;
    try {
      assertEquals(1, ping(socket, old, 1), "the first server answers at the path");
      Object oldFile = fileKey(socket);

      successor = new Server(socket);
      assertNotEquals(oldFile, fileKey(socket), "the path now names the successor's socket");
      assertEquals(1, ping(socket, successor, 1), "a new connection reaches the successor");
      assertEquals(1, old.pings(), "not the old server");

      old.close();
      old = null;
      assertTrue(
          Files.exists(socket, LinkOption.NOFOLLOW_LINKS),
          "the old server's shutdown left the successor's socket in place");
      assertEquals(2, ping(socket, successor, 2), "and clients still reach the successor");
    } finally {
      if (old != null) {
        old.close();
      }
      if (successor != null) {
        successor.close();
      }
    }
    assertFalse(
        Files.exists(socket, LinkOption.NOFOLLOW_LINKS),
        "the server that held the path removed it");
    try (Stream<Path> left = Files.list(dir)) {
      assertEquals(0, left.count(), "no bind name left behind");
    }
  }

  /**
   * One PING on a new connection to {@code socket}; returns how many PINGs {@code expected} has
   * answered once it has booked {@code atLeast} (or after 20 s).
   */
  private static long ping(Path socket, Server expected, long atLeast) throws Exception {
    try (RawPeer peer = new RawPeer(socket.toString())) {
      peer.writeRaw(LivenessProbeTest.PING);
      assertArrayEquals(PONG, LivenessProbeTest.readExactly(peer.in(), PONG.length));
    }
    // Booked by the event loop once the answer is out, after the client may have read it.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    long n;
    while ((n = expected.metrics.requests(ShimMetrics.OpKind.EXT_PING, Status.SUCCESS)) < atLeast
        && System.nanoTime() - deadline < 0) {
      TimeUnit.MILLISECONDS.sleep(10);
    }
    return n;
  }

  private static Object fileKey(Path p) throws IOException {
    return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
  }

  /** A shim server with its own metrics, serving probes only. */
  private static final class Server implements AutoCloseable {
    final ShimMetrics metrics = new ShimMetrics();
    final ShimServer server;

    Server(Path socket) throws IOException {
      ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
      SegmentRegistry registry = new SegmentRegistry(limits, metrics);
      ShortCircuitService service = TestServices.probesOnly(registry, limits, metrics);
      server =
          new ShimServer(
              socket,
              ShimConfig.from(new Configuration(false)),
              service,
              registry,
              limits,
              metrics,
              Ticker.SYSTEM);
      server.start();
    }

    long pings() {
      return metrics.requests(ShimMetrics.OpKind.EXT_PING, Status.SUCCESS);
    }

    @Override
    public void close() {
      server.close();
    }
  }
}
