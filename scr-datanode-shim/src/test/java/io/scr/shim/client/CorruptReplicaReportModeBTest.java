package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B of {@code CorruptReplicaReportTest} (scr-core): two DataNodes with the shim on one host,
 * replication 2, one replica corrupt on disk and already open in the engine's cache. Each new
 * stream tries the two DataNodes in random order (the NameNode shuffles equally close locations);
 * whichever it tries, every read returns the good bytes and the good replica is never reported, and
 * once a stream has read the corrupt replica the NameNode lists exactly that replica as corrupt.
 */
class CorruptReplicaReportModeBTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK;
  private static final int BAD = 0;

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
          .configure(c -> c.setInt("dfs.replication", 2))
          .buildExtension();

  @Test
  void theCorruptReplicaIsReportedOnceReadAndTheGoodOneNever() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/corrupt/b", LEN, 47);
    LocatedBlock lb =
        DFS.dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks("/corrupt/b", 0, 1)
            .getLocatedBlocks()
            .get(0);
    assertEquals(2, lb.getLocations().length, "replication 2");
    corrupt(lb.getBlock(), BAD);
    int badPort = DFS.dfs().cluster().getDataNodes().get(BAD).getXferPort();
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  c.setBoolean("dfs.client.read.shortcircuit", false); // no libhadoop
                  c.set("scr.client.context", "corrupt-mode-b");
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    try {
      Engine engine = Engine.running(fs.getConf());
      // The corrupt replica is cached: a cache keyed by block alone would serve it to a stream
      // that asks the good DataNode, and that stream would report the good replica.
      String badPath = DFS.dfs().socketPath(BAD);
      ReplicaLease lease =
          engine.lease(lb.getBlock(), lb.getBlockToken(), badPath, "warm-up", null);
      assertNotNull(lease, "lease from " + badPath);
      assertEquals(badPath, lease.socketPath());
      lease.close();

      int streams = 0;
      while (engine.metricsSnapshot().checksumFailures() == 0 && streams < 40) {
        streams++;
        try (FSDataInputStream in = fs.open(new Path("/corrupt/b"))) {
          byte[] all = new byte[LEN];
          in.readFully(0, all);
          assertArrayEquals(expect, all, "stream " + streams);
        }
        List<Integer> reported = corruptReplicaPorts(lb.getBlock());
        assertTrue(
            reported.isEmpty() || reported.equals(List.of(badPort)),
            "only the corrupt replica may be reported: " + reported + " after stream " + streams);
      }
      assertEquals(
          1,
          engine.metricsSnapshot().checksumFailures(),
          "a stream read the corrupt replica within " + streams + " streams");
      assertEquals(
          List.of(badPort),
          corruptReplicaPorts(lb.getBlock()),
          "reported by the read that found it");
    } finally {
      fs.close();
    }
  }

  /** Overwrites 64 bytes at block offset 4000 of DataNode {@code index}'s replica, in place. */
  private static void corrupt(ExtendedBlock block, int index) throws IOException {
    File f = DFS.dfs().cluster().getBlockFile(index, block);
    assertNotNull(f, "DataNode " + index + " holds " + block);
    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
      byte[] bytes = new byte[64];
      raf.seek(4000);
      raf.readFully(bytes);
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] ^= (byte) 0x5a;
      }
      raf.seek(4000);
      raf.write(bytes);
    }
  }

  private static List<Integer> corruptReplicaPorts(ExtendedBlock block) {
    Collection<DatanodeDescriptor> corrupt =
        DFS.dfs()
            .cluster()
            .getNamesystem()
            .getBlockManager()
            .getCorruptReplicas(block.getLocalBlock());
    List<Integer> ports = new ArrayList<>();
    if (corrupt != null) {
      for (DatanodeDescriptor d : corrupt) {
        ports.add(d.getXferPort());
      }
    }
    return ports;
  }
}
