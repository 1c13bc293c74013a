package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * A failed connect names the remedy for the error it got. Before, the hint came from looking at the
 * file afterwards, so a socket in a directory the client may not traverse (EACCES) was reported as
 * "the socket file does not exist".
 */
class ConnectHintTest {
  @TempDir Path dir;

  @Test
  void aListenerThatDoesNotAcceptTimesTheConnectOutInsteadOfHoldingIt() throws Exception {
    Path path = dir.resolve("full.sock");
    ExecutorService connecting = Executors.newSingleThreadExecutor();
    List<SocketChannel> queued = new ArrayList<>();
    // A DataNode that does not accept (hung, or every accept failing with EMFILE): its backlog of
    // 1 fills, and a blocking connect(2) then waits until it is accepted.
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance();
        DomainSocketPool pool = DomainSocketPool.newBuilder().connectTimeoutMs(300).build()) {
      server.bind(AFUNIXSocketAddress.of(path.toFile()), 1);
      while (queued.size() < 100) {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.configureBlocking(false);
        try {
          ch.connect(UnixDomainSocketAddress.of(path));
          queued.add(ch);
        } catch (IOException full) { // EAGAIN: the backlog is full
          ch.close();
          break;
        }
      }
      long start = System.nanoTime();
      Future<DomainConnection> attempt = connecting.submit(() -> pool.connect(path.toString()));
      ExecutionException e =
          assertThrows(
              ExecutionException.class,
              () -> attempt.get(10, TimeUnit.SECONDS),
              "the connect must fail within its timeout, not wait for an accept");
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(e.getCause() instanceof DomainConnectException, e.getCause().toString());
      assertTrue(e.getCause().getCause() instanceof SocketTimeoutException, e.toString());
      assertTrue(e.getCause().getMessage().contains("accept queue is full"), e.toString());
      assertTrue(tookMs < 5_000, "took " + tookMs + " ms");
    } finally {
      for (SocketChannel ch : queued) {
        ch.close();
      }
      connecting.shutdownNow(); // the server closed: a connect still waiting returns
      assertTrue(connecting.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  @Test
  void aMissingSocketAsksWhetherTheDataNodeRunsWithThatPath() throws IOException {
    String path = dir.resolve("missing.sock").toString();
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      DomainConnectException e =
          assertThrows(DomainConnectException.class, () -> pool.connect(path));
      assertTrue(
          e.getMessage().contains("no such socket: is the DataNode running with"), e.getMessage());
      assertTrue(e.getMessage().contains(path), e.getMessage());
    }
  }

  @Test
  void aFileNobodyListensOnIsConnectionRefused() throws IOException {
    Path stale = Files.createFile(dir.resolve("stale.sock"));
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      DomainConnectException e =
          assertThrows(DomainConnectException.class, () -> pool.connect(stale.toString()));
      assertTrue(e.getMessage().contains("connection refused"), e.getMessage());
      assertFalse(e.getMessage().contains("no such socket"), e.getMessage());
    }
  }

  @Test
  void permissionDeniedIsNotReportedAsAMissingFile() {
    // What connect(2) reports for a socket under a directory the user may not traverse (0700 owned
    // by the DataNode user); the file then also looks missing to this user.
    String hint =
        DomainSocketPool.connectHint(
            dir.resolve("hidden/dn_socket").toString(), new SocketException("Permission denied"));
    assertTrue(
        hint.startsWith(
            "permission denied: the client user cannot reach the socket; the directory must be"
                + " traversable (o+x)"),
        hint);
    assertFalse(hint.contains("does not exist"), hint);
  }
}
