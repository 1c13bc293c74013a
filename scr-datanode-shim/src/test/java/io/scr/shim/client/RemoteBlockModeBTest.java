package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.internal.engine.Engine;
import io.scr.shim.ScrShimPlugin;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B, two shim DataNodes on one host, a file whose every block lives only on DataNode 1, and a
 * client given only DataNode 0's shim socket: DataNode 0's shim is asked for each block at most
 * once however many reads and streams follow (its own {@code requests.request_fds.*} counters),
 * through both integration points, and registers no slot for the refused requests. The mode A
 * counterpart is {@code io.scr.core.hdfs.RemoteBlockStockScrTest}.
 */
class RemoteBlockModeBTest {
  private static final int BLOCK = 1 << 20;
  private static final int BLOCKS = 4;
  private static final int LEN = BLOCKS * BLOCK;
  private static final String FILE = "/remote/only-on-dn1";
  private static byte[] data;

  static {
    // The JVM-wide singletons before the cluster's leak baseline.
    io.scr.shim.JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(2)
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setInt("dfs.replication", 1))
          .buildExtension();

  @BeforeAll
  static void writeFileOnDataNodeOne() throws Exception {
    data = new byte[LEN];
    new Random(3).nextBytes(data);
    DataNode dn1 = DFS.dfs().cluster().getDataNodes().get(1);
    try (FSDataOutputStream out =
        DFS.dfs()
            .fileSystem()
            .create(
                new Path(FILE),
                FsPermission.getFileDefault(),
                true,
                4096,
                (short) 1,
                BLOCK,
                null,
                new InetSocketAddress[] {dn1.getXferAddress()})) {
      out.write(data);
    }
    List<LocatedBlock> blocks =
        DFS.dfs().fileSystem().getClient().getLocatedBlocks(FILE, 0, LEN).getLocatedBlocks();
    for (LocatedBlock lb : blocks) {
      assertEquals(dn1.getXferPort(), lb.getLocations()[0].getXferPort(), "pinned to DataNode 1");
    }
  }

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  /** The counters of DataNode {@code index}'s shim. */
  static Map<String, Long> shim(int index) throws Exception {
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(index);
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof ScrShimPlugin shim) {
        return shim.counters();
      }
    }
    throw new AssertionError("no ScrShimPlugin in " + plugins);
  }

  /** Fd requests DataNode {@code index}'s shim refused with ERROR. */
  static long refused(int index) throws Exception {
    return shim(index).getOrDefault("requests.request_fds.error", 0L);
  }

  private static FileSystem fileSystem(String context, Consumer<Configuration> extra) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              c.set("scr.client.socket.paths", DFS.dfs().socketPath(0));
              c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop
              c.set("scr.client.context", context);
              c.setInt("scr.metrics.summary.interval.seconds", 0);
              extra.accept(c);
            });
  }

  private static void randomPreads(FSDataInputStream in, Random rnd, int reads) throws Exception {
    byte[] buf = new byte[4096];
    for (int i = 0; i < reads; i++) {
      int off = rnd.nextInt(LEN - buf.length);
      in.readFully(off, buf);
      assertArrayEquals(Arrays.copyOfRange(data, off, off + buf.length), buf, "at " + off);
    }
  }

  @Test
  void theAccessorAsksTheShimAtMostOncePerRemoteBlock() throws Exception {
    String context = "remote-b-accessor";
    FileSystem fs =
        fileSystem(
            context,
            c ->
                c.set(
                    "dfs.client.replica.accessor.builder.classes",
                    ScrReplicaAccessorBuilder.class.getName()));
    long before = refused(0);
    Random rnd = new Random(21);
    for (int stream = 0; stream < 3; stream++) {
      try (FSDataInputStream in = fs.open(new Path(FILE))) {
        randomPreads(in, rnd, 100);
      }
    }
    long asked = refused(0) - before;
    assertTrue(asked >= 1, "scr did ask DataNode 0 (else the test proves nothing): " + asked);
    assertTrue(asked <= BLOCKS, "DataNode 0 refused " + asked + " requests for " + BLOCKS);
    assertEquals(0L, shim(0).get("live.slots"), "no slot registered for a refused request");
    Engine engine = Engine.running(fs.getConf());
    assertEquals(asked, engine.metricsSnapshot().absentReplicasRemembered());
  }

  @Test
  void scrFileSystemAsksTheShimAtMostOncePerRemoteBlockOverManyStreams() throws Exception {
    FileSystem fs =
        fileSystem(
            "remote-b-scrfs",
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              c.setBoolean("fs.hdfs.impl.disable.cache", true);
            });
    long before = refused(0);
    Random rnd = new Random(22);
    for (int stream = 0; stream < 10; stream++) {
      try (FSDataInputStream in = fs.open(new Path(FILE))) {
        randomPreads(in, rnd, 30);
      }
    }
    long asked = refused(0) - before;
    assertTrue(asked >= 1, "scr did ask DataNode 0 (else the test proves nothing): " + asked);
    assertTrue(
        asked <= BLOCKS, "DataNode 0 refused " + asked + " for " + BLOCKS + " over 10 streams");
    assertEquals(0L, shim(0).get("live.slots"), "no slot registered for a refused request");
  }
}
