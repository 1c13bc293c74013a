package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * The exit hook unlinks the socket the shim bound, and only that one: a socket a new DataNode bound
 * at the same path since (another file) stays. The hook itself running at a real SIGTERM is shown
 * by scr-it-deploy's DeploymentTest (a shim DataNode JVM stopped with SIGTERM).
 */
class SocketRemovalAtExitTest {
  @Test
  void theHookRemovesTheSocketItBoundAndNoOther(@TempDir Path dir) throws Exception {
    Path socket = dir.resolve("dn.sock");
    try (AFUNIXServerSocket ours = AFUNIXServerSocket.bindOn(AFUNIXSocketAddress.of(socket))) {
      Runnable hook = ScrShimPlugin.socketRemovalHook(socket);
      hook.run();
      assertFalse(Files.exists(socket), "the socket this shim bound is removed at exit");
    }
    try (AFUNIXServerSocket ours = AFUNIXServerSocket.bindOn(AFUNIXSocketAddress.of(socket))) {
      Runnable hook = ScrShimPlugin.socketRemovalHook(socket);
      Files.delete(socket); // ...and a new DataNode binds its own at the same path
      try (AFUNIXServerSocket theirs = AFUNIXServerSocket.bindOn(AFUNIXSocketAddress.of(socket))) {
        hook.run();
        assertTrue(Files.exists(socket), "another process's socket at the path must stay");
      }
    }
  }
}
