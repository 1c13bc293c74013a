package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
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
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A corrupt local replica in mode A: two stock DataNodes on one host, replication 2, so each block
 * has a replica on both and both are short-circuit candidates. One replica's block file is
 * corrupted on disk; a read through {@link ScrFileSystem} must return the right bytes (from the
 * other replica) and the NameNode must list exactly the corrupt replica, after that one read —
 * never the good one, which is what reporting "the DataNode the table chose" gets wrong when the
 * replica cache hands out another DataNode's replica of the same block.
 *
 * <p>The NameNode orders two equally close locations randomly, so each test asks the stream which
 * DataNode it chose and corrupts accordingly; the engine's cache is warmed with the <em>other</em>
 * DataNode's replica first, so a cache keyed by block alone would serve the wrong one.
 */
class CorruptReplicaReportTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK;

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

  private FileSystem fs;
  private Engine engine;

  @BeforeEach
  void openFileSystem() {
    String context = "corrupt-report";
    fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  context(c, context);
                });
    engine = ((ScrFileSystem) fs).engine();
  }

  @AfterEach
  void closeFileSystem() throws IOException {
    fs.close();
  }

  private static void context(Configuration c, String context) {
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
  }

  @Test
  void theCorruptReplicaTheStreamReadIsReportedAndTheGoodOneServesTheRead() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/corrupt/chosen", LEN, 31);
    try (FSDataInputStream in = fs.open(new Path("/corrupt/chosen"))) {
      ScrInputStream scr = (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
      LocatedBlock lb = firstBlock("/corrupt/chosen");
      int chosen = dataNodeIndex(scr.blocks().socketPathAt(0));
      int other = 1 - chosen;
      warmCache(lb, other); // a cache keyed by block alone would now serve the good replica
      corrupt(lb.getBlock(), chosen);

      byte[] all = new byte[LEN];
      in.readFully(0, all);

      assertArrayEquals(expect, all, "the good replica's bytes");
      assertEquals(
          1, scr.counters().checksumFallbacks(), "one checksum failure, on the short-circuit path");
      assertEquals(
          List.of(xferPort(chosen)),
          corruptReplicaPorts(lb.getBlock()),
          "exactly the replica that was read is corrupt at the NameNode, after one read");
    }
  }

  @Test
  void theGoodReplicaIsNotReportedWhenTheCorruptOneIsCachedFromTheOtherDataNode() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/corrupt/other", LEN, 37);
    try (FSDataInputStream in = fs.open(new Path("/corrupt/other"))) {
      ScrInputStream scr = (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
      LocatedBlock lb = firstBlock("/corrupt/other");
      int chosen = dataNodeIndex(scr.blocks().socketPathAt(0));
      int other = 1 - chosen;
      corrupt(lb.getBlock(), other);
      warmCache(lb, other); // the corrupt replica is cached; the stream asks the good DataNode

      byte[] all = new byte[LEN];
      in.readFully(0, all);

      assertArrayEquals(expect, all);
      assertEquals(0, scr.counters().checksumFallbacks(), "the chosen DataNode's replica is good");
      assertEquals(
          LEN,
          ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead(),
          "read short-circuit throughout, from the good replica");
      assertEquals(
          List.of(), corruptReplicaPorts(lb.getBlock()), "the good replica is never reported");
    }
  }

  @Test
  void aStatefulReadReportsTheCorruptReplicaToo() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/corrupt/stateful", LEN, 41);
    try (FSDataInputStream in = fs.open(new Path("/corrupt/stateful"))) {
      ScrInputStream scr = (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
      LocatedBlock lb = firstBlock("/corrupt/stateful");
      int chosen = dataNodeIndex(scr.blocks().socketPathAt(0));
      corrupt(lb.getBlock(), chosen);

      byte[] all = new byte[LEN];
      int off = 0;
      while (off < LEN) {
        int n = in.read(all, off, Math.min(100_000, LEN - off));
        assertTrue(n > 0, "read at " + off);
        off += n;
      }

      assertArrayEquals(expect, all);
      assertEquals(1, scr.counters().checksumFallbacks());
      assertEquals(List.of(xferPort(chosen)), corruptReplicaPorts(lb.getBlock()));
    }
  }

  /**
   * The accessor is not told which DataNode the stock stream chose; with the corrupt replica
   * cached, every attempt used to get it again (and stock blamed whichever DataNode it had chosen)
   * until the read failed with {@code BlockMissingException}.
   */
  @Test
  void theAccessorFallsBackToTheGoodReplicaWhenTheCachedOneIsCorrupt() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/corrupt/accessor", LEN, 43);
    LocatedBlock lb = firstBlock("/corrupt/accessor");
    String context = "corrupt-accessor";
    FileSystem stock =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  context(c, context);
                });
    try {
      Configuration conf = DFS.dfs().clientConf();
      context(conf, context);
      Engine accessorEngine = ScrReplicaAccessorBuilder.engine(conf);
      corrupt(lb.getBlock(), 0);
      String path = DFS.dfs().socketPath(0);
      ReplicaLease lease =
          accessorEngine.lease(lb.getBlock(), lb.getBlockToken(), path, "warm-up", null);
      assertNotNull(lease);
      lease.close();
      for (int i = 0; i < 4; i++) {
        try (FSDataInputStream in = stock.open(new Path("/corrupt/accessor"))) {
          byte[] all = new byte[LEN];
          in.readFully(0, all);
          assertArrayEquals(expect, all, "attempt " + i);
        }
        List<Integer> reported = corruptReplicaPorts(lb.getBlock());
        assertTrue(
            reported.isEmpty() || reported.equals(List.of(xferPort(0))),
            "only the corrupt replica may be reported: " + reported);
      }
      assertEquals(
          1,
          accessorEngine.metricsSnapshot().checksumFailures(),
          "the corrupt cached replica was read once, then never served again");
    } finally {
      stock.close();
      ScrReplicaAccessorBuilder.releaseAll();
    }
  }

  /** Leases (and releases) DataNode {@code index}'s replica, so the engine caches it. */
  private void warmCache(LocatedBlock lb, int index) throws IOException {
    String path = DFS.dfs().socketPath(index);
    ReplicaLease lease = engine.lease(lb.getBlock(), lb.getBlockToken(), path, "warm-up", null);
    assertNotNull(lease, "lease from " + path);
    try {
      assertEquals(path, lease.socketPath(), "the lease names the DataNode it was asked of");
    } finally {
      lease.close();
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

  private static LocatedBlock firstBlock(String file) throws IOException {
    LocatedBlock lb =
        DFS.dfs().fileSystem().getClient().getLocatedBlocks(file, 0, 1).getLocatedBlocks().get(0);
    assertEquals(2, lb.getLocations().length, "replication 2");
    return lb;
  }

  private static int dataNodeIndex(String socketPath) {
    assertNotNull(socketPath, "the first block is short-circuit eligible");
    for (int i = 0; i < 2; i++) {
      if (DFS.dfs().socketPath(i).equals(socketPath)) {
        return i;
      }
    }
    throw new AssertionError("no DataNode has socket " + socketPath);
  }

  private static int xferPort(int index) {
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(index);
    return dn.getXferPort();
  }

  /** Transfer ports of the DataNodes whose replica of {@code block} the NameNode marks corrupt. */
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
