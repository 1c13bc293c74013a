package io.scr.core.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.RequiresRoot;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * The doctor against a socket directory that belongs to another user (the DataNode's), at 0755,
 * 0711 and 0700: it never takes root (or itself) for the DataNode user, judges the directory by the
 * DataNode user's rules, and prints no fix that would lock the DataNode out. The ownership is
 * injected for a regular build; the root-only case gives the directory to another user for real.
 */
class ForeignSocketDirectoryTest {
  @TempDir Path dir;

  private static final int HDFS = 994;

  private List<Finding> check(DoctorContext.Builder b) {
    return Doctor.run(
        b.trustedDirectoryForTests(dir).build(), Collections.singletonList(new SocketPathCheck()));
  }

  private static Configuration conf(String template) {
    Configuration c = new Configuration(false);
    c.set("dfs.domain.socket.path", template);
    return c;
  }

  private Path emptyProc() throws Exception {
    return Files.createDirectories(dir.resolve("proc"));
  }

  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  void aDataNodeUserGivenByNameOwnsItsDirectory(int mode) throws Exception {
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    FakeHost host = new FakeHost().own(sockets, mode, HDFS, HDFS).user(HDFS, "hdfs-test");
    Path confDir = Files.createDirectory(dir.resolve("conf"));
    Files.write(
        confDir.resolve("hdfs-site.xml"),
        ("<configuration><property><name>dfs.domain.socket.path</name><value>"
                + sockets.resolve("dn._PORT.sock")
                + "</value></property></configuration>")
            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    DoctorContext ctx =
        Doctor.context(confDir.toString(), Collections.emptyList(), false, "hdfs-test", host);
    assertEquals(HDFS, ctx.dataNodeUid());
    List<Finding> f =
        Doctor.run(
            DoctorContext.newBuilder(ctx.conf())
                .dataNodeUid(ctx.dataNodeUid())
                .hostFacts(host)
                .procRootForTests(emptyProc())
                .trustedDirectoryForTests(dir)
                .build(),
            Collections.singletonList(new SocketPathCheck()));
    String all = f.toString();
    assertFalse(all.contains("is not secure enough"), all);
    assertFalse(all.contains("neither root nor"), all);
    assertFalse(all.contains("unknown here"), all);
  }

  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  void anUnknownDataNodeUserIsSaidNotGuessed(int mode) throws Exception {
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    FakeHost host = new FakeHost().own(sockets, mode, HDFS, HDFS).user(HDFS, "hdfs-test");
    List<Finding> f =
        check(
            DoctorContext.newBuilder(conf(sockets.resolve("dn._PORT.sock").toString()))
                .hostFacts(host)
                .procRootForTests(emptyProc()));
    String all = f.toString();
    assertTrue(all.contains("the DataNode's user is unknown here"), all);
    assertTrue(all.contains(sockets + " is owned by uid 994 (hdfs-test), which is right if"), all);
    assertTrue(all.contains("scr doctor --datanode-user USER"), all);
    assertFalse(all.contains("neither root nor"), all);
    assertFalse(all.contains("uid 0") || all.contains("chown"), all);
  }

  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  void anotherUserThanTheDataNodesIsToldToGiveTheDirectoryToTheDataNodeUser(int mode)
      throws Exception {
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    FakeHost host = new FakeHost().own(sockets, mode, 4343, 4343).user(HDFS, "hdfs-test");
    List<Finding> f =
        check(
            DoctorContext.newBuilder(conf(sockets.resolve("dn.sock").toString()))
                .hostFacts(host)
                .dataNodeUid(HDFS)
                .procRootForTests(emptyProc()));
    String all = f.toString();
    assertTrue(
        all.contains(
            sockets
                + " is owned by uid 4343, neither root nor the DataNode user, uid 994"
                + " (hdfs-test). Run: chown hdfs-test "
                + sockets),
        all);
    assertFalse(all.contains("chown 0") || all.contains("chown root"), all);
  }

  /**
   * For real: root gives the directory and a live socket in it to uid 4343, and runs the doctor
   * without telling it the DataNode user. The socket's owner is the DataNode user; root (the
   * doctor's own user) is never named as it.
   */
  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  @RequiresRoot("chown of a directory and a socket to another user")
  void aDirectoryOwnedByAnotherUserForReal(int mode) throws Exception {
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    File socket = sockets.resolve("dn.9866.sock").toFile();
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance()) {
      server.bind(AFUNIXSocketAddress.of(socket));
      Files.setAttribute(socket.toPath(), "unix:uid", 4343);
      Files.setAttribute(sockets, "unix:uid", 4343);
      Files.setAttribute(sockets, "unix:gid", 4343);
      Files.setPosixFilePermissions(
          sockets, java.nio.file.attribute.PosixFilePermissions.fromString(rwx(mode)));
      List<Finding> f =
          check(
              DoctorContext.newBuilder(conf(sockets.resolve("dn._PORT.sock").toString()))
                  .procRootForTests(emptyProc()));
      String all = f.toString();
      assertEquals(1, f.size(), all);
      assertEquals(Finding.Status.OK, f.get(0).status(), all);
      assertTrue(all.contains(socket + " is a socket in a secure directory"), all);
      assertFalse(all.contains("uid 0") || all.contains("chown") || all.contains("unknown"), all);
      // Judged for the socket's owner: a DataNode user other than 4343 fails, naming 4343.
      List<Finding> other =
          check(
              DoctorContext.newBuilder(conf(sockets.resolve("dn._PORT.sock").toString()))
                  .dataNodeUid(HDFS)
                  .procRootForTests(emptyProc()));
      assertTrue(
          other.toString().contains(sockets + " is owned by uid 4343, neither root nor"),
          other.toString());
    } finally {
      Files.setAttribute(sockets, "unix:uid", 0);
    }
  }

  private static String rwx(int mode) {
    StringBuilder sb = new StringBuilder();
    String letters = "rwx";
    for (int bit = 8; bit >= 0; bit--) {
      sb.append((mode & (1 << bit)) != 0 ? letters.charAt((8 - bit) % 3) : '-');
    }
    return sb.toString();
  }
}
