package io.scr.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.Ticker;
import io.scr.testing.LogCapture;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A socket directory clients may traverse but not list (0711, a sound secure layout): the accessor
 * must still find the DataNode's socket ({@code _PORT} from {@code dfs.datanode.address}) and say
 * once why and how to name several DataNodes. Before the fix the template was dropped silently and
 * every accessor read fell back.
 */
class UnlistableSocketDirectoryTest {
  @TempDir Path dir;

  private static Configuration conf(String socketTemplate) {
    Configuration c = new Configuration(false);
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.set("dfs.domain.socket.path", socketTemplate);
    return c;
  }

  private static boolean isRoot() {
    try {
      return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
    } catch (IOException | RuntimeException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  @Test
  void anUnlistableDirectoryResolvesPortFromTheDataNodeAddressAndWarnsOnce() throws IOException {
    String template = dir.resolve("dn_socket._PORT").toString();
    Configuration c = conf(template);
    c.set("dfs.datanode.address", "0.0.0.0:50010");
    try (LogCapture warnings = LogCapture.scrWarnings();
        // The listing fails as it does for a non-root client at 0711 (root lists any directory).
        Engine scr = new Engine(c, "unlistable-seam", Ticker.systemTicker(), d -> null)) {
      assertEquals(
          Collections.singletonList(dir.resolve("dn_socket.50010").toString()),
          scr.localSocketPaths());
      assertEquals(
          Collections.singletonList(dir.resolve("dn_socket.50010").toString()),
          scr.localSocketPaths(),
          "the second call resolves the same way");
      List<String> lines = warnings.matching("cannot list the socket directory");
      assertEquals(1, lines.size(), "one WARN per engine: " + warnings.all());
      String line = lines.get(0);
      assertTrue(line.startsWith("WARN"), line);
      assertTrue(line.contains(dir.toString()), "names the directory: " + line);
      assertTrue(line.contains("dfs.datanode.address (50010)"), "says what it does: " + line);
      assertTrue(line.contains("scr.client.socket.paths"), "names the fix: " + line);
    }
  }

  @Test
  void theDefaultTransferPortIsUsedWhenTheAddressIsUnset() {
    Configuration c = conf(dir.resolve("dn._PORT.sock").toString());
    try (Engine scr = new Engine(c, "unlistable-default", Ticker.systemTicker(), d -> null)) {
      assertEquals(
          Collections.singletonList(dir.resolve("dn.9866.sock").toString()),
          scr.localSocketPaths());
    }
  }

  @Test
  void anEphemeralTransferPortCannotBeGuessedAndTheWarningSaysReadsFallBack() {
    Configuration c = conf(dir.resolve("dn._PORT.sock").toString());
    c.set("dfs.datanode.address", "127.0.0.1:0");
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = new Engine(c, "unlistable-ephemeral", Ticker.systemTicker(), d -> null)) {
      assertEquals(Collections.emptyList(), scr.localSocketPaths());
      List<String> lines = warnings.matching("cannot list the socket directory");
      assertEquals(1, lines.size(), warnings.all().toString());
      assertTrue(lines.get(0).contains("fall back to TCP"), lines.get(0));
    }
  }

  @Test
  void aListableDirectoryIsStillListedAndNothingIsLogged() throws IOException {
    Files.createFile(dir.resolve("dn_socket.1234"));
    Files.createFile(dir.resolve("dn_socket.5678"));
    Configuration c = conf(dir.resolve("dn_socket._PORT").toString());
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = new Engine(c, "listable", Ticker.systemTicker())) {
      List<String> paths = scr.localSocketPaths();
      Collections.sort(paths);
      assertEquals(
          List.of(
              dir.resolve("dn_socket.1234").toString(), dir.resolve("dn_socket.5678").toString()),
          paths);
      assertEquals(List.of(), warnings.matching("socket directory"));
    }
  }

  /** The real permission case; root lists any directory, so it needs a non-root build. */
  @Test
  void aReal0711DirectoryAsNonRoot() throws IOException {
    Assumptions.assumeFalse(
        isRoot(),
        "running as root: permission bits do not stop root from listing a 0711 directory; the"
            + " listing failure is injected in the test above instead");
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    Files.createFile(sockets.resolve("dn_socket.9866"));
    Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("--x--x--x"));
    try {
      assertEquals(null, new File(sockets.toString()).list(), "the directory cannot be listed");
      Configuration c = conf(sockets.resolve("dn_socket._PORT").toString());
      try (Engine scr = new Engine(c, "unlistable-real", Ticker.systemTicker())) {
        assertEquals(
            Collections.singletonList(sockets.resolve("dn_socket.9866").toString()),
            scr.localSocketPaths());
      }
    } finally {
      Files.setPosixFilePermissions(sockets, PosixFilePermissions.fromString("rwx------"));
    }
  }

  @Test
  void aTemplateThatMatchesNoSocketIsOneWarningNamingTheStockDataNodeSwitch() {
    String template = dir.resolve("dn_socket._PORT").toString();
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = new Engine(conf(template), "no-socket", Ticker.systemTicker())) {
      for (int i = 0; i < 3; i++) {
        assertEquals(List.of(), scr.localSocketPaths());
      }
      List<String> lines = warnings.matching("no DataNode socket on this host matches");
      assertEquals(1, lines.size(), warnings.all().toString());
      String line = lines.get(0);
      assertTrue(line.contains("dfs.domain.socket.path = " + template), line);
      assertTrue(line.contains("dfs.client.read.shortcircuit=true in its own hdfs-site.xml"), line);
      assertEquals(List.of(), warnings.matching("cannot list"), "the directory is listable");
    }
  }

  @Test
  void aMissingDirectoryIsNoSocketNotAnUnlistableDirectory() {
    String template = dir.resolve("absent/dn_socket._PORT").toString();
    try (LogCapture warnings = LogCapture.scrWarnings();
        Engine scr = new Engine(conf(template), "no-dir", Ticker.systemTicker())) {
      assertEquals(List.of(), scr.localSocketPaths());
      assertEquals(1, warnings.matching("does not exist").size(), warnings.all().toString());
      assertEquals(List.of(), warnings.matching("cannot list"), warnings.all().toString());
    }
  }
}
