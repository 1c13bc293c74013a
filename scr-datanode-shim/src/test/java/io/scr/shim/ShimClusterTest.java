package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode C: the stock DFSClient with libhadoop reads through the shim. One cluster for every check in
 * this class (a start costs seconds); block tokens are on so token checks are real.
 */
class ShimClusterTest {
  static final int BLOCK_SIZE = 256 * 1024;

  static {
    JvmSingletons.warm(); // before the extension takes its leak baseline
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK_SIZE)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setBoolean("dfs.block.access.token.enable", true))
          .buildExtension();

  @BeforeAll
  static void stockClientNeedsLibhadoop() {
    StockNative.requireAvailable();
  }

  static MiniDfs dfs() {
    return DFS.dfs();
  }

  static ScrShimPlugin plugin() throws ReflectiveOperationException {
    DataNode dn = dfs().cluster().getDataNodes().get(0);
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof ScrShimPlugin shim) {
        return shim;
      }
    }
    throw new AssertionError("no ScrShimPlugin in " + plugins);
  }

  /** Reads the whole file with pread; returns [bytes..., short-circuit byte count at the end]. */
  static byte[] readAll(DistributedFileSystem fs, String path, int length, long[] scBytes)
      throws IOException {
    byte[] read = new byte[length];
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path(path))) {
      in.readFully(0, read);
      scBytes[0] = in.getReadStatistics().getTotalShortCircuitBytesRead();
    }
    return read;
  }

  @Test
  void stockClientReadsThroughTheShimShortCircuit() throws Exception {
    assertTrue(plugin().awaitServing(30_000), "shim not serving: " + plugin().failure());
    int length = 3 * BLOCK_SIZE + 1234;
    byte[] written = dfs().writeRandomFile("/modec/file", length, 42);

    long[] sc = new long[1];
    byte[] viaShim = readAll(dfs().fileSystem(), "/modec/file", length, sc);
    DistributedFileSystem tcp =
        dfs().newFileSystem(c -> c.setBoolean("dfs.client.read.shortcircuit", false));
    long[] tcpSc = new long[1];
    byte[] viaTcp = readAll(tcp, "/modec/file", length, tcpSc);

    assertArrayEquals(written, viaShim);
    assertArrayEquals(viaTcp, viaShim);
    assertEquals(length, sc[0], "every byte should be short-circuit through the shim");
    assertEquals(0, tcpSc[0]);

    Map<String, Long> counters = plugin().counters();
    assertTrue(counters.get("fds_passed") >= 8, counters.toString());
    assertNotNull(counters.get("requests.request_fds.success"), counters.toString());
    assertTrue(counters.get("live.segments") >= 1, "stock client should use shm: " + counters);
    assertTrue(counters.get("live.slots") >= 1, counters.toString());
  }
}
