package io.scr.core.net;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failed connect names the remedy for the error it got. Before, the hint came from looking at the
 * file afterwards, so a socket in a directory the client may not traverse (EACCES) was reported as
 * "the socket file does not exist".
 */
class ConnectHintTest {
  @TempDir Path dir;

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
