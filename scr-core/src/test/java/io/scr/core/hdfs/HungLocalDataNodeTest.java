package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.FallbackReason;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.health.FakeDataNodeSocket;
import io.scr.core.stats.HealthState;
import io.scr.testing.DataNodeMode;
import io.scr.testing.HeldDatasetLock;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A, two DataNodes, every block on both. One DataNode's socket is made to hang: its socket
 * file is moved aside (the DataNode keeps serving on it) and a socket that accepts and never
 * answers takes its place, which is what a stopped DataNode looks like to a client. A first read of
 * a block of that DataNode goes to the other replica after one health deadline, later first reads
 * at once, a replica open already keeps reading short-circuit, and the probe brings the DataNode
 * back as soon as its real socket answers again. A DataNode whose RPC hangs (its dataset lock held)
 * costs an open of a file being written at most the RPC's bound, not stock's socket timeout.
 */
class HungLocalDataNodeTest {
  private static final int BLOCK = 64 * 1024;
  private static final int BLOCKS = 9;

  /** The socket timeout of these engines: what a first read would wait without the deadline. */
  private static final int SOCKET_TIMEOUT_MS = 30_000;

  static {
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(2)
          .blockSize(BLOCK)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(c -> c.setInt("dfs.replication", 2))
          .buildExtension();

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static ScrFileSystem fileSystem(String context) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              c.setBoolean("dfs.client.read.shortcircuit", false); // every local byte is scr's
              c.set("scr.client.context", context);
              c.setInt("scr.client.prefetch.max-blocks", 0);
              c.setInt("scr.net.read.timeout.ms", SOCKET_TIMEOUT_MS);
              c.setInt("scr.metrics.summary.interval.seconds", 0);
              // A connection made before the socket file moved still reaches the real DataNode:
              // with no idle connection kept, every request connects, and meets the hung socket.
              c.setInt("scr.net.pool.max.idle.per.path", 0);
            });
  }

  /** Stock's wait for a DataNode's RPC in the test of opens of a file being written. */
  private static final int STOCK_RPC_TIMEOUT_MS = 10_000;

  private static ScrInputStream scr(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  private static void checkPread(FSDataInputStream in, byte[] data, long pos) throws Exception {
    byte[] buf = new byte[4096];
    in.readFully(pos, buf);
    assertArrayEquals(Arrays.copyOfRange(data, (int) pos, (int) pos + buf.length), buf);
  }

  /** A DataNode socket replaced by a hung one until {@link #close()} puts the real one back. */
  private static final class HungSocket implements AutoCloseable {
    final Path real;
    final Path aside;
    final FakeDataNodeSocket fake;

    HungSocket(String path) throws Exception {
      real = Paths.get(path);
      aside = Paths.get(path + ".aside");
      Files.move(real, aside);
      fake = FakeDataNodeSocket.hung(real);
    }

    @Override
    public void close() throws Exception {
      fake.close(); // the "process" is gone: its connections close, its file is removed
      Files.move(aside, real);
    }
  }

  private static int dataNodeIndexOf(String socketPath) {
    for (int i = 0; i < DFS.dfs().dataNodes(); i++) {
      if (DFS.dfs().socketPath(i).equals(socketPath)) {
        return i;
      }
    }
    throw new AssertionError("no DataNode has socket " + socketPath);
  }

  private static long suspectTransitions(Engine engine, String socket) {
    return engine.dataNodeHealth().snapshot().stream()
        .filter(st -> st.path().equals(socket))
        .mapToLong(st -> st.transitionsTo(HealthState.SUSPECT))
        .sum();
  }

  private static void awaitHealthy(Engine client, String path) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (client.dataNodeHealth().state(path) != HealthState.HEALTHY) {
      if (System.nanoTime() - deadline > 0) {
        fail("still " + client.dataNodeHealth().state(path) + " 30 s after its socket came back");
      }
      Thread.sleep(10);
    }
  }

  /** A read through the engine. */
  @FunctionalInterface
  interface Read {
    void run() throws Exception;
  }

  /**
   * Waits until the DataNode at {@code path} is healthy and its trial is over, running {@code read}
   * while it is on trial: back on a probe's word, an open offers its request as the trial (sent off
   * the read path) and reads the stock way; the trial's answer (a refusal too) ends it.
   */
  private static void awaitOpensAskedAgain(Engine client, String path, Read read) throws Exception {
    awaitHealthy(client, path);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (client.dataNodeHealth().onTrial(path)
        || client.dataNodeHealth().state(path) != HealthState.HEALTHY) {
      if (System.nanoTime() - deadline > 0) {
        fail("still on trial or " + client.dataNodeHealth().state(path) + " after 30 s");
      }
      read.run();
      Thread.sleep(10);
    }
  }

  /** {@link #awaitOpensAskedAgain} with a lease of {@code lb}'s block (any answer ends a trial). */
  private static void awaitOpensAskedAgain(Engine client, String path, LocatedBlock lb)
      throws Exception {
    awaitOpensAskedAgain(
        client,
        path,
        () -> {
          io.scr.core.ReplicaLease l =
              client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null);
          if (l != null) {
            l.close();
          }
        });
  }

  @Test
  void firstReadsGoToTheOtherReplicaWhileOpenReplicasKeepReadingShortCircuit() throws Exception {
    byte[] data = DFS.dfs().writeRandomFile("/hung/a", BLOCKS * BLOCK, 31);
    ScrFileSystem fs = fileSystem("hung-dn");
    Engine engine = fs.engine();
    try (FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/hung/a"))) {
      ScrInputStream s = scr(in);
      // The blocks the stream reads through one DataNode's socket: at least 5 of 9 on one.
      List<Long> onFirst = new ArrayList<>();
      List<Long> onSecond = new ArrayList<>();
      String first = s.blocks().socketPathAt(0);
      for (int b = 0; b < BLOCKS; b++) {
        long pos = (long) b * BLOCK + 100;
        assertNotNull(s.blocks().socketPathAt(pos), "every block is local");
        (first.equals(s.blocks().socketPathAt(pos)) ? onFirst : onSecond).add(pos);
      }
      List<Long> blocks = onFirst.size() >= 4 ? onFirst : onSecond;
      String socket = s.blocks().socketPathAt(blocks.get(0));
      DataNode hungDataNode = DFS.dfs().cluster().getDataNodes().get(dataNodeIndexOf(socket));
      long cached = blocks.get(0);
      long firstAfterHang = blocks.get(1);
      long statefulAfterHang = blocks.get(2);
      long afterRecovery = blocks.get(3);

      checkPread(in, data, cached); // opens and caches that replica
      long shortCircuit = s.counters().shortCircuitReads();
      assertEquals(1, shortCircuit);

      try (HungSocket hung = new HungSocket(socket)) {
        long t0 = System.nanoTime();
        checkPread(in, data, firstAfterHang);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(
            tookMs < SOCKET_TIMEOUT_MS / 6,
            "one health deadline and a stock read, not the "
                + SOCKET_TIMEOUT_MS
                + " ms socket timeout: "
                + tookMs
                + " ms");
        assertEquals(1, engine.fallbackCount(FallbackReason.DATANODE_TIMEOUT));
        assertNotEquals(HealthState.HEALTHY, engine.dataNodeHealth().state(socket));
        assertEquals(1, hung.fake.requests(87));

        // A stateful read shows which DataNode stock chose: not the hung one.
        in.seek(statefulAfterHang);
        byte[] buf = new byte[4096];
        in.readFully(buf);
        assertArrayEquals(
            Arrays.copyOfRange(data, (int) statefulAfterHang, (int) statefulAfterHang + 4096), buf);
        assertNotEquals(
            hungDataNode.getXferPort(),
            ((HdfsDataInputStream) in).getCurrentDatanode().getXferPort(),
            "stock read another replica");
        assertEquals(1, hung.fake.requests(87), "no fd request while it is not healthy");
        assertTrue(engine.fallbackCount(FallbackReason.DATANODE_UNHEALTHY) >= 1);
        assertTrue(s.counters().steeredReads() >= 1, "stock's choice was steered");

        checkPread(in, data, cached);
        assertEquals(
            shortCircuit + 1, s.counters().shortCircuitReads(), "the open replica reads on");
      }

      long opens = engine.cacheStats().loadSuccessCount();
      // Back on a probe's word: the first read's open is the trial, sent off the read path.
      awaitOpensAskedAgain(engine, socket, () -> checkPread(in, data, afterRecovery));
      long local = s.counters().shortCircuitReads();
      checkPread(in, data, afterRecovery);
      assertEquals(local + 1, s.counters().shortCircuitReads(), "new opens go local again");
      assertEquals(opens + 1, engine.cacheStats().loadSuccessCount());
    }
  }

  /**
   * Stock asks a block being written's locations for its visible length in order, each with its
   * socket timeout, on every open: an open that finds the hung DataNode first waits that timeout.
   * scr waits at most its RPC's bound, makes the DataNode suspect, and takes the length from the
   * other replica.
   */
  @Test
  void opensOfAFileBeingWrittenDoNotWaitForAHungDataNodesRpc() throws Exception {
    org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path("/hung/being-written");
    byte[] data = new byte[BLOCK + 5000];
    new java.util.Random(33).nextBytes(data);
    ScrFileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set("scr.client.context", "hung-rpc");
                  c.setInt("scr.client.prefetch.max-blocks", 0);
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                  c.setInt("dfs.client.socket-timeout", STOCK_RPC_TIMEOUT_MS);
                });
    String socket = null;
    try (FSDataOutputStream out = DFS.dfs().fileSystem().create(path, (short) 2)) {
      out.write(data);
      out.hflush();
      DataNode hungDataNode = DFS.dfs().cluster().getDataNodes().get(0);
      socket = DFS.dfs().socketPath(0);
      String blockPool =
          DFS.dfs()
              .fileSystem()
              .getClient()
              .getLocatedBlocks(path.toString(), 0)
              .getLastLocatedBlock()
              .getBlock()
              .getBlockPoolId();
      Engine engine = fs.engine();
      long suspectBefore = suspectTransitions(engine, socket);
      List<Long> tookMs = new ArrayList<>();
      try (HeldDatasetLock held = new HeldDatasetLock(hungDataNode, blockPool)) {
        // The NameNode lists the two local replicas in either order: open until an open has met
        // the hung DataNode first (it then becomes suspect), six opens at least.
        while (tookMs.size() < 6
            || (suspectTransitions(engine, socket) == suspectBefore && tookMs.size() < 40)) {
          long t0 = System.nanoTime();
          try (FSDataInputStream in = fs.open(path)) {
            tookMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            assertEquals(data.length, ((HdfsDataInputStream) in).getVisibleLength());
          }
        }
      }
      System.out.println("opens of a file being written, one DataNode's RPC hung (ms): " + tookMs);
      assertTrue(
          suspectTransitions(engine, socket) > suspectBefore,
          "an open asked the hung DataNode and waited the RPC's bound: " + tookMs);
      for (long ms : tookMs) {
        assertTrue(
            ms < STOCK_RPC_TIMEOUT_MS / 2,
            "an open waited at most the RPC's bound ("
                + VisibleLengthRpc.MAX_CALL_MILLIS
                + " ms), not the "
                + STOCK_RPC_TIMEOUT_MS
                + " ms socket timeout: "
                + tookMs);
      }
      try (FSDataInputStream in = fs.open(path)) {
        byte[] got = new byte[data.length];
        in.readFully(0, got);
        assertArrayEquals(data, got);
      }
    } finally {
      if (socket != null) {
        awaitOpensAskedAgain(
            fs.engine(),
            socket,
            DFS.dfs().fileSystem().getClient().getLocatedBlocks(path.toString(), 0).get(0));
      }
      fs.close();
    }
  }

  @Test
  void theAccessorAnswersAtOnceWhileTheLocalDataNodeIsNotHealthy() throws Exception {
    DFS.dfs().writeRandomFile("/hung/accessor", BLOCK, 32);
    Configuration conf = DFS.dfs().clientConf();
    conf.setBoolean("dfs.client.read.shortcircuit", false);
    conf.set("scr.client.context", "hung-accessor");
    conf.setInt("scr.net.read.timeout.ms", SOCKET_TIMEOUT_MS);
    conf.setInt("scr.metrics.summary.interval.seconds", 0);
    conf.setInt("scr.net.pool.max.idle.per.path", 0);
    LocatedBlock lb =
        DFS.dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks("/hung/accessor", 0, BLOCK)
            .getLocatedBlocks()
            .get(0);
    ExtendedBlock block = lb.getBlock();
    Engine engine = ScrReplicaAccessorBuilder.engine(conf);
    List<String> sockets = engine.localSocketPaths();
    assertEquals(2, sockets.size());
    List<HungSocket> hung = new ArrayList<>();
    try {
      for (String socket : sockets) {
        hung.add(new HungSocket(socket));
        long t0 = System.nanoTime();
        assertNull(engine.lease(block, lb.getBlockToken(), socket, null, null), "times out once");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(
            tookMs < SOCKET_TIMEOUT_MS / 6,
            "the endpoint's first exchange waited one deadline, not the socket timeout: "
                + tookMs
                + " ms");
      }
      assertEquals(2, engine.fallbackCount(FallbackReason.DATANODE_TIMEOUT), "one per DataNode");
      int[] asked = new int[hung.size()];
      for (int i = 0; i < asked.length; i++) {
        asked[i] = hung.get(i).fake.requests(87) + hung.get(i).fake.requests(89);
        assertEquals(1, asked[i], "the lease that timed out asked once (a segment or fds)");
      }
      long t0 = System.nanoTime();
      Object accessor =
          new ScrReplicaAccessorBuilder()
              .setConfiguration(conf)
              .setAllowShortCircuitReads(true)
              .setBlock(block.getBlockId(), block.getBlockPoolId())
              .setGenerationStamp(block.getGenerationStamp())
              .setFileName("/hung/accessor")
              .setBlockAccessToken(tokenBytes(lb.getBlockToken()))
              .setVerifyChecksum(true)
              .build();
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertNull(accessor, "no local DataNode answers: stock reads the block");
      assertTrue(tookMs < 2000, "answered at once, no exchange started: " + tookMs + " ms");
      for (int i = 0; i < asked.length; i++) {
        assertEquals(
            asked[i],
            hung.get(i).fake.requests(87) + hung.get(i).fake.requests(89),
            "the accessor asked no DataNode that is not healthy");
      }
      assertTrue(engine.fallbackCount(FallbackReason.DATANODE_UNHEALTHY) >= 1);
    } finally {
      for (HungSocket h : hung) {
        h.close();
      }
    }
    for (String socket : sockets) {
      awaitOpensAskedAgain(engine, socket, lb);
    }
  }

  private static byte[] tokenBytes(Token<?> token) throws Exception {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    token.write(new java.io.DataOutputStream(out));
    return out.toByteArray();
  }
}
