package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.FileDescriptor;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A, two stock DataNodes on one host, a file whose every block lives only on DataNode 1, and a
 * client given only DataNode 0's socket ({@code scr.client.socket.paths}): every block is remote to
 * scr. DataNode 0 must be asked for each block at most once, however many reads and streams follow
 * (counted by DataNode 0 itself: {@code BlocksGetLocalPathInfo}, which a stock DataNode increments
 * for every fd request that passed the token check, refused or not), through both integration
 * points; and its refusal must leave the pooled connection in use.
 */
class RemoteBlockStockScrTest {
  private static final int BLOCK = 1 << 20;
  private static final int BLOCKS = 4;
  private static final int LEN = BLOCKS * BLOCK;
  private static final String FILE = "/remote/only-on-dn1";
  private static byte[] data;

  static {
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(2)
          .blockSize(BLOCK)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(c -> c.setInt("dfs.replication", 1))
          .buildExtension();

  @BeforeAll
  static void writeFileOnDataNodeOne() throws Exception {
    data = new byte[LEN];
    new Random(3).nextBytes(data);
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    DataNode dn1 = DFS.dfs().cluster().getDataNodes().get(1);
    InetSocketAddress favored = dn1.getXferAddress();
    try (FSDataOutputStream out =
        fs.create(
            new Path(FILE),
            FsPermission.getFileDefault(),
            true,
            4096,
            (short) 1,
            BLOCK,
            null,
            new InetSocketAddress[] {favored})) {
      out.write(data);
    }
    for (LocatedBlock lb : blocks()) {
      assertEquals(1, lb.getLocations().length);
      assertEquals(dn1.getXferPort(), lb.getLocations()[0].getXferPort(), "pinned to DataNode 1");
    }
  }

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static List<LocatedBlock> blocks() throws Exception {
    return DFS.dfs().fileSystem().getClient().getLocatedBlocks(FILE, 0, LEN).getLocatedBlocks();
  }

  /** Fd requests DataNode {@code index} has seen (refused ones included). */
  static long fdRequests(int index) throws ReflectiveOperationException {
    DataNodeMetrics m = DFS.dfs().cluster().getDataNodes().get(index).getMetrics();
    Field f = DataNodeMetrics.class.getDeclaredField("blocksGetLocalPathInfo");
    f.setAccessible(true);
    return ((MutableCounterLong) f.get(m)).value();
  }

  /** Client settings: scr knows DataNode 0's socket only; stock reads the rest over TCP. */
  private static void onlyDataNodeZero(Configuration c, String context) {
    c.set("scr.client.socket.paths", DFS.dfs().socketPath(0));
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
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
  void theAccessorAsksTheLocalDataNodeAtMostOncePerRemoteBlock() throws Exception {
    String context = "remote-accessor";
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  onlyDataNodeZero(c, context);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                });
    long before = fdRequests(0);
    long dn1Before = fdRequests(1);
    Random rnd = new Random(11);
    for (int stream = 0; stream < 3; stream++) {
      try (FSDataInputStream in = fs.open(new Path(FILE))) {
        randomPreads(in, rnd, 100);
      }
    }
    long asked = fdRequests(0) - before;
    assertTrue(asked >= 1, "scr did ask DataNode 0 (else the test proves nothing): " + asked);
    assertTrue(
        asked <= BLOCKS, "DataNode 0 asked " + asked + " times for " + BLOCKS + " remote blocks");
    assertEquals(0, fdRequests(1) - dn1Before, "scr was not given DataNode 1's socket");
    Engine engine = ScrReplicaAccessorBuilder.engine(fs.getConf());
    ClientSnapshot s = engine.metricsSnapshot();
    assertEquals(asked, s.absentReplicasRemembered(), "each refusal remembered");
    assertTrue(
        s.absentReplicaRequestsAvoided() >= 300 - BLOCKS,
        "every later read avoided the request: " + s.absentReplicaRequestsAvoided());
    assertEquals(0, s.shortCircuitReads(), "nothing was read short-circuit");
  }

  @Test
  void scrFileSystemAsksTheLocalDataNodeAtMostOncePerRemoteBlockOverManyStreams() throws Exception {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  onlyDataNodeZero(c, "remote-scrfs");
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                });
    long before = fdRequests(0);
    Random rnd = new Random(12);
    // HBase reopens HFiles (region moves, compactions): each stream starts without history.
    for (int stream = 0; stream < 10; stream++) {
      try (FSDataInputStream in = fs.open(new Path(FILE))) {
        randomPreads(in, rnd, 30);
      }
    }
    long asked = fdRequests(0) - before;
    assertTrue(asked >= 1, "scr did ask DataNode 0 (else the test proves nothing): " + asked);
    assertTrue(
        asked <= BLOCKS,
        "DataNode 0 asked " + asked + " times for " + BLOCKS + " remote blocks over 10 streams");
    try (Engine engine = Engine.acquire(fs.getConf())) {
      assertTrue(engine.absentReplicas().avoidedCount() > 0, "later streams asked nobody");
    }
  }

  @Test
  void aRefusedFdRequestKeepsTheConnectionAndIsMarkedAbsent() throws Exception {
    LocatedBlock lb = blocks().get(0);
    String dn0 = DFS.dfs().socketPath(0);
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      for (int i = 0; i < 10; i++) {
        FileDescriptor[] fds = new FileDescriptor[2];
        ShortCircuitRefusedException e =
            assertThrows(
                ShortCircuitRefusedException.class,
                () ->
                    ShortCircuitExchanges.requestFds(
                        pool, dn0, lb.getBlock(), lb.getBlockToken(), null, fds));
        assertTrue(e.replicaAbsent(), "DataNode 0 holds no such replica: " + e.getMessage());
        assertEquals(null, fds[0]);
      }
      assertEquals(1, pool.connectCount(), "one connection for ten refusals");
      assertEquals(9, pool.reuseCount());
      assertEquals(1, pool.idleConnectionCount(), "back in the pool");
    }
  }

  @Test
  void aRefusalForAnotherReasonIsNotRememberedAsAbsent() throws Exception {
    LocatedBlock lb = blocks().get(0);
    String dn1 = DFS.dfs().socketPath(1);
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      FileDescriptor[] fds = new FileDescriptor[2];
      // A slot of a segment DataNode 1 never created: the replica is there, the slot is wrong.
      io.scr.shm.SlotId bogus = io.scr.shm.SlotId.of(io.scr.shm.ShmId.of(1, 2), 3);
      ShortCircuitRefusedException e =
          assertThrows(
              ShortCircuitRefusedException.class,
              () ->
                  ShortCircuitExchanges.requestFds(
                      pool, dn1, lb.getBlock(), lb.getBlockToken(), bogus, fds));
      assertTrue(!e.replicaAbsent(), "a slot problem is not an absent replica: " + e.getMessage());
      // The same connection still serves the replica afterwards.
      ShortCircuitExchanges.requestFds(pool, dn1, lb.getBlock(), lb.getBlockToken(), null, fds);
      assertNotNull(fds[0]);
      new java.io.FileInputStream(fds[0]).close();
      new java.io.FileInputStream(fds[1]).close();
      assertEquals(1, pool.connectCount(), "the refusal left the connection usable");
    }
  }
}
