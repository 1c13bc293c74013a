package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The socket path check runs end to end in a DataNode. A shim whose socket directory anyone can
 * write does not start (its failure names the key and the directory), binds nothing, and the
 * DataNode keeps running. The shared temporary directory above is trusted by the test plugin
 * ({@link TempDirShimPlugin}: its components are not judged); the socket's own directory is.
 */
class InsecureSocketPathClusterTest {
  private static final Path TRUSTED = trustedParent();
  private static final Path OPEN_DIR = worldWritable(TRUSTED.resolve("open"));

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .mode(DataNodeMode.TCP)
          .configure(
              c -> {
                c.set("dfs.datanode.plugins", TempDirShimPlugin.class.getName());
                c.set(
                    ScrShimKeys.SOCKET_PATH.name(), OPEN_DIR.resolve("shim._PORT.sock").toString());
              })
          .buildExtension();

  private static Path trustedParent() {
    try {
      return Files.createTempDirectory(Paths.get("/tmp"), "scr-insecure-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Path worldWritable(Path dir) {
    try {
      Files.createDirectory(dir);
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @AfterAll
  static void removeDirectories() throws IOException {
    Files.deleteIfExists(OPEN_DIR);
    Files.deleteIfExists(TRUSTED);
  }

  @Test
  void aWorldWritableSocketDirectoryRefusesToStart() throws Exception {
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(0);
    ScrShimPlugin plugin = ShimMetricsClusterTest.plugin(dn);
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (plugin.failure() == null && System.nanoTime() < deadline) {
      Thread.sleep(20); // the plugin starts on its control thread once the dataset exists
    }
    assertInstanceOf(SocketPathSecurity.InsecureSocketPathException.class, plugin.failure());
    String message = plugin.failure().getMessage();
    assertTrue(
        message.contains(OPEN_DIR.toString()) && message.contains(ScrShimKeys.SOCKET_PATH.name()),
        message);
    assertFalse(plugin.awaitServing(0), "not serving");
    assertNull(plugin.socketPath(), "nothing bound");
    try (var files = Files.list(OPEN_DIR)) {
      assertFalse(files.findAny().isPresent(), "no socket file in the insecure directory");
    }
    assertTrue(dn.isDatanodeUp(), "the DataNode itself keeps running");
  }
}
