package io.scr.socketpath;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rules on injected facts: a socket directory owned by another user at 0755, 0711 and 0700,
 * judged for the DataNode user, and the user database. Runs the same for root and anyone else.
 */
class SocketPathRulesTest {
  @TempDir Path tmp;

  /** A host of four directories: / and /var root's, /var/run/hdfs-sockets the given owner's. */
  private static HostFacts host(int mode, int owner) {
    Map<Path, Stat> stats = new HashMap<>();
    stats.put(Paths.get("/"), new Stat(0755, 0, 0));
    stats.put(Paths.get("/var"), new Stat(0755, 0, 0));
    stats.put(Paths.get("/var/run"), new Stat(0755, 0, 0));
    stats.put(Paths.get("/var/run/hdfs-sockets"), new Stat(mode, owner, owner));
    return new HostFacts() {
      @Override
      public Stat stat(Path path) throws IOException {
        Stat s = stats.get(path);
        if (s == null) {
          throw new NoSuchFileException(path.toString());
        }
        return s;
      }

      @Override
      public String userName(int uid) {
        return uid == 0 ? "root" : uid == 994 ? "hdfs" : null;
      }

      @Override
      public OptionalInt uidOf(String name) {
        return OptionalInt.empty();
      }
    };
  }

  private static final Path SOCKET = Paths.get("/var/run/hdfs-sockets/dn.9866.sock");

  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  void theDataNodeUsersOwnDirectoryPassesAtAnyTraversableMode(int mode) {
    assertEquals(List.of(), SocketPathRules.violations(SOCKET, 994, null, host(mode, 994)));
    // Unknown DataNode user: the owner is not judged.
    assertEquals(List.of(), SocketPathRules.violations(SOCKET, -1, null, host(mode, 994)));
  }

  @ParameterizedTest
  @ValueSource(ints = {0755, 0711, 0700})
  void anotherUsersDirectoryIsToBeGivenToTheDataNodeUserNeverToRoot(int mode) {
    String all = String.join("; ", SocketPathRules.violations(SOCKET, 994, null, host(mode, 4343)));
    assertTrue(
        all.contains(
            "/var/run/hdfs-sockets is owned by uid 4343, neither root nor the DataNode user,"
                + " uid 994 (hdfs). Run: chown hdfs /var/run/hdfs-sockets"),
        all);
    assertFalse(all.contains("chown root") || all.contains("chown 0"), all);
  }

  @Test
  void aReadOnlyDirectoryOfAnotherUserPassesLikeStock() {
    // Stock judges the owner only of a directory its owner may write.
    assertEquals(List.of(), SocketPathRules.violations(SOCKET, 994, null, host(0555, 4343)));
  }

  @Test
  void usersAreReadFromAPasswdFile() throws IOException {
    Path passwd = tmp.resolve("passwd");
    Files.write(
        passwd,
        "root:x:0:0:root:/root:/bin/bash\n# comment\nhdfs:x:994:994::/var/lib/hdfs:/bin/false\n"
            .getBytes(StandardCharsets.UTF_8));
    Users users = new Users(passwd);
    assertEquals("hdfs", users.name(994));
    assertEquals(994, users.uid("hdfs").getAsInt());
    assertEquals(null, users.name(4343));
    assertFalse(users.uid("nobody-here").isPresent());
    assertEquals(null, new Users(tmp.resolve("missing")).name(0));
  }

  @Test
  void theEffectiveUidIsTheSecondFieldOfTheUidLine() throws IOException {
    assertEquals(995, EffectiveUid.parse("Name:\tjsvc\nUid:\t0\t995\t995\t995\n"));
  }
}
