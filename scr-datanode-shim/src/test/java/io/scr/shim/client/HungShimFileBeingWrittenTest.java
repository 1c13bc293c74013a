package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.core.stats.HealthState;
import io.scr.testing.DataNodeMode;
import io.scr.testing.HeldDatasetLock;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B, two DataNodes with the shim, a file being written on both. One DataNode hangs on its
 * replica map (its dataset lock held): an open of the file that asks it for the visible length over
 * its UNIX socket (REPLICA_STATE) waits one health deadline, not the socket timeout, and takes the
 * length from the other replica.
 */
class HungShimFileBeingWrittenTest {
  private static final int BLOCK = 64 * 1024;

  /** The engine's socket timeout: what an open would wait without the deadline. */
  private static final int SOCKET_TIMEOUT_MS = 10_000;

  static {
    io.scr.shim.JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(2)
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setInt("dfs.replication", 2))
          .buildExtension();

  private static long suspectTransitions(Engine engine, String socket) {
    return engine.dataNodeHealth().snapshot().stream()
        .filter(st -> st.path().equals(socket))
        .mapToLong(st -> st.transitionsTo(HealthState.SUSPECT))
        .sum();
  }

  @Test
  void opensOfAFileBeingWrittenWaitOneDeadlineForAHungDataNode() throws Exception {
    Path path = new Path("/hung-shim/being-written");
    byte[] data = new byte[BLOCK + 5000];
    new Random(34).nextBytes(data);
    ScrFileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  c.setBoolean("dfs.client.read.shortcircuit", false); // no libhadoop
                  c.set("scr.client.context", "hung-shim-being-written");
                  c.setInt("scr.client.prefetch.max-blocks", 0);
                  c.setInt("scr.net.read.timeout.ms", SOCKET_TIMEOUT_MS);
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    Engine engine = Engine.running(fs.getConf());
    try (FSDataOutputStream out = DFS.dfs().fileSystem().create(path, (short) 2)) {
      out.write(data);
      out.hflush();
      String socket = DFS.dfs().socketPath(0);
      for (int i = 0; i < DFS.dfs().dataNodes(); i++) {
        assertTrue(
            engine.extensions().features(DFS.dfs().socketPath(i)).replicaState(),
            "the shim offers REPLICA_STATE");
      }
      String blockPool =
          DFS.dfs()
              .fileSystem()
              .getClient()
              .getLocatedBlocks(path.toString(), 0)
              .getLastLocatedBlock()
              .getBlock()
              .getBlockPoolId();
      long suspectBefore = suspectTransitions(engine, socket);
      List<Long> tookMs = new ArrayList<>();
      try (HeldDatasetLock held =
          new HeldDatasetLock(DFS.dfs().cluster().getDataNodes().get(0), blockPool)) {
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
      System.out.println("opens of a file being written, one shim DataNode hung (ms): " + tookMs);
      assertTrue(
          suspectTransitions(engine, socket) > suspectBefore,
          "an open waited its deadline for the hung DataNode: " + tookMs);
      for (long ms : tookMs) {
        assertTrue(
            ms < SOCKET_TIMEOUT_MS / 4,
            "an open waited one health deadline, not the "
                + SOCKET_TIMEOUT_MS
                + " ms socket timeout: "
                + tookMs);
      }
      try (FSDataInputStream in = fs.open(path)) {
        byte[] got = new byte[data.length];
        in.readFully(0, got);
        assertArrayEquals(data, got);
      }
    } finally {
      fs.close();
    }
  }
}
