package io.scr.core.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * {@code scr doctor} run as a client user over a secure socket directory: at 0711 (traverse, not
 * list) it finds the socket as the client does; when it cannot traverse the directory it says so
 * instead of "does not exist". Permission bits do not stop root, so both need a non-root run.
 */
class DoctorSocketAccessTest {
  @TempDir Path dir;

  private static void assumeNotRoot() {
    boolean root;
    try {
      root = ((Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | RuntimeException e) {
      root = "root".equals(System.getProperty("user.name"));
    }
    Assumptions.assumeFalse(
        root, "running as root: permission bits do not stop root from listing or traversing");
  }

  private List<Finding> check(String template) {
    Configuration c = new Configuration(false);
    c.set("dfs.domain.socket.path", template);
    DoctorContext ctx =
        DoctorContext.newBuilder(c).trustedDirectoryForTests(dir.getParent()).build();
    return Doctor.run(ctx, Collections.singletonList(new SocketPathCheck()));
  }

  @Test
  void aDirectoryThatCanBeTraversedButNotListedStillShowsTheSocket() throws IOException {
    assumeNotRoot();
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    File socket = sockets.resolve("dn_socket.9866").toFile();
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance()) {
      server.bind(AFUNIXSocketAddress.of(socket));
      List<Finding> f;
      Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("--x--x--x"));
      try {
        f = check(sockets.resolve("dn_socket._PORT").toString());
      } finally {
        // Writable again before the server closes: it deletes its socket file.
        Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("rwx------"));
      }
      String all = f.toString();
      assertFalse(all.contains("does not exist"), all);
      assertEquals(Finding.Status.OK, f.get(0).status(), all);
      assertTrue(f.get(0).finding().contains(socket + " is a socket"), all);
    }
  }

  @Test
  void aDirectoryThatCannotBeTraversedIsPermissionDeniedNotMissing() throws IOException {
    assumeNotRoot();
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("---------"));
    try {
      List<Finding> f = check(sockets.resolve("dn_socket._PORT").toString());
      String all = f.toString();
      assertFalse(all.contains("does not exist"), all);
      assertTrue(all.contains("cannot be reached by this user"), all);
      assertTrue(all.contains("chmod o+x " + sockets), all);
      assertTrue(all.contains("socket " + sockets.resolve("dn_socket.9866") + " ("), all);
    } finally {
      Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("rwx------"));
    }
  }

  @Test
  void anUnlistableDirectoryIsJudgedAtThePathTheClientResolves() throws IOException {
    assumeNotRoot();
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    // A DataNode on another port: the client, unable to list, asks only dn_socket.9866.
    File other = sockets.resolve("dn_socket.9867").toFile();
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance()) {
      server.bind(AFUNIXSocketAddress.of(other));
      List<Finding> f;
      Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("--x--x--x"));
      String template = sockets.resolve("dn_socket._PORT").toString();
      try {
        f = check(template);
      } finally {
        Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("rwx------"));
      }
      String all = f.toString();
      assertTrue(
          all.contains("socket " + sockets.resolve("dn_socket.9866") + " (" + template + " with"),
          all);
      assertTrue(all.contains("does not exist"), all);
      assertFalse(all.contains("socket " + template + " does not exist"), all);
      assertTrue(all.contains("set it to the DataNode's, or list the socket in"), all);
    }
  }
}
