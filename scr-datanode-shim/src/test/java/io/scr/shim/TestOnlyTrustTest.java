package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.scr.socketpath.EffectiveUid;
import io.scr.socketpath.SocketPathRules;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Only a test build of the plugin trusts a temporary directory: the production plugin judges every
 * component of the socket path whatever its configuration says (the keys that once turned the check
 * off or trusted a directory are gone), and {@link TempDirShimPlugin}, named in {@code
 * dfs.datanode.plugins}, serves from the same layout with {@code SocketPathCheckSkipped} set (that
 * it still judges the socket's own directory is {@link InsecureSocketPathClusterTest}). The layout:
 * a private socket directory below a private directory below {@code /tmp}, which fails the check on
 * this machine (world-writable) or the test is skipped.
 */
class TestOnlyTrustTest {
  private Path trusted;
  private Path socketDir;

  @BeforeEach
  void layout() throws IOException {
    trusted = Files.createTempDirectory(Paths.get("/tmp"), "scr-trust-");
    socketDir = Files.createDirectory(trusted.resolve("sock"));
    Files.setPosixFilePermissions(socketDir, PosixFilePermissions.fromString("rwx------"));
    assumeFalse(
        SocketPathRules.violations(socketDir.resolve("probe.sock"), EffectiveUid.self()).isEmpty(),
        "/tmp passes the socket path check here: nothing to trust");
  }

  @AfterEach
  void removeLayout() throws IOException {
    try (var files = Files.list(socketDir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.deleteIfExists(f);
      }
    }
    Files.deleteIfExists(socketDir);
    Files.deleteIfExists(trusted);
  }

  private MiniDfs cluster(String pluginClass, boolean oldTestKeys) throws IOException {
    return MiniDfs.builder()
        .mode(DataNodeMode.TCP)
        .configure(
            c -> {
              c.set("dfs.datanode.plugins", pluginClass);
              c.set(
                  ScrShimKeys.SOCKET_PATH.name(), socketDir.resolve("shim._PORT.sock").toString());
              if (oldTestKeys) {
                c.set("scr.shim.socket.path.trusted.dir.test-only", trusted.toString());
                c.setBoolean("scr.shim.socket.path.validation.skip.test-only", true);
              }
            })
        .start();
  }

  private static ScrShimPlugin awaitOutcome(MiniDfs dfs) throws Exception {
    DataNode dn = dfs.cluster().getDataNodes().get(0);
    ScrShimPlugin plugin = ShimMetricsClusterTest.plugin(dn);
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (plugin.failure() == null && !plugin.awaitServing(20) && System.nanoTime() < deadline) {
      // the plugin starts on its control thread once the dataset exists
    }
    return plugin;
  }

  @Test
  void theProductionPluginIgnoresTheRemovedTestKeys() throws Exception {
    try (MiniDfs dfs = cluster(ScrShimPlugin.class.getName(), true)) {
      ScrShimPlugin plugin = awaitOutcome(dfs);
      assertInstanceOf(
          SocketPathSecurity.InsecureSocketPathException.class,
          plugin.failure(),
          "the production plugin judged /tmp and refused it");
      assertNull(plugin.socketPath(), "nothing bound");
      assertEquals(0L, plugin.counters().get("socket_path_check_skipped"));
    }
  }

  @Test
  void theTestPluginTrustsOnlyTheDirectoryAboveTheSocketDirectory() throws Exception {
    try (MiniDfs dfs = cluster(TempDirShimPlugin.class.getName(), false)) {
      ScrShimPlugin plugin = awaitOutcome(dfs);
      assertNull(plugin.failure());
      assertTrue(plugin.awaitServing(0), "serving");
      assertEquals(1L, plugin.counters().get("socket_path_check_skipped"));
    }
  }
}
