package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A with two stock DataNodes on one host, replication 1, so every block lives on exactly one
 * of them: each DataNode has its own socket ({@code dn._PORT.sock}), {@link Engine} resolves the
 * right one when it knows the DataNode, and the replica accessor, which is told only the block,
 * finds the holder with at most one refused request per file.
 */
class MultiDataNodeStockScrTest {
  private static final int BLOCK = 1 << 20;
  private static final int BLOCKS_PER_FILE = 3;
  private static final int LEN = BLOCKS_PER_FILE * BLOCK - 1000;

  /** Files whose blocks are pinned to one DataNode (favored nodes), alternating. */
  private static final int PINNED_FILES = 6;

  /** Files placed by the NameNode (each block on a random DataNode of this host). */
  private static final int RANDOM_FILES = 2;

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

  /** File name to its bytes; pinned file i is written to DataNode i % 2. */
  private static final Map<String, byte[]> FILES_WRITTEN = new HashMap<>();

  @BeforeAll
  static void writeFilesOnBothDataNodes() throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    Random rnd = new Random(17);
    for (int i = 0; i < PINNED_FILES + RANDOM_FILES; i++) {
      byte[] bytes = new byte[LEN];
      rnd.nextBytes(bytes);
      String name = (i < PINNED_FILES ? "/multi/pinned" : "/multi/random") + i;
      InetSocketAddress[] favored =
          i < PINNED_FILES
              ? new InetSocketAddress[] {
                DFS.dfs().cluster().getDataNodes().get(i % 2).getXferAddress()
              }
              : null;
      try (FSDataOutputStream out =
          fs.create(
              new Path(name),
              FsPermission.getFileDefault(),
              true,
              4096,
              (short) 1,
              BLOCK,
              null,
              favored)) {
        out.write(bytes);
      }
      FILES_WRITTEN.put(name, bytes);
    }
  }

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static List<LocatedBlock> blocks(String name) throws Exception {
    return DFS.dfs().fileSystem().getClient().getLocatedBlocks(name, 0, LEN).getLocatedBlocks();
  }

  private static Configuration conf(String context) {
    Configuration c = DFS.dfs().clientConf();
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    return c;
  }

  @Test
  void eachDataNodeHasItsOwnSocketAndBothServeTheirBlocks() throws Exception {
    Engine client = Engine.acquire(conf("multi-known-dn"));
    try {
      List<String> seen = new ArrayList<>();
      int[] onEach = new int[2];
      for (String name : FILES_WRITTEN.keySet()) {
        for (LocatedBlock lb : blocks(name)) {
          assertEquals(1, lb.getLocations().length, "replication 1");
          DatanodeInfo dn = lb.getLocations()[0];
          String path = client.socketPathFor(dn);
          int index = indexOf(dn);
          onEach[index]++;
          assertEquals(DFS.dfs().socketPath(index), path, "the socket of the DataNode holding it");
          if (!seen.contains(path)) {
            seen.add(path);
          }
          try (ReplicaLease lease =
              client.lease(lb.getBlock(), lb.getBlockToken(), path, name, null)) {
            assertNotNull(lease, "lease of " + lb.getBlock() + " from " + path);
            byte[] got = new byte[(int) Math.min(70_000, lease.length())];
            int n = 0;
            while (n < got.length) {
              n += lease.read(n, got, n, got.length - n, true);
            }
            int start = (int) lb.getStartOffset();
            assertArrayEquals(
                Arrays.copyOfRange(FILES_WRITTEN.get(name), start, start + got.length), got);
          }
        }
      }
      assertEquals(2, seen.size(), "two distinct socket paths");
      assertNotEquals(seen.get(0), seen.get(1));
      assertTrue(
          onEach[0] > 0 && onEach[1] > 0,
          "blocks on both DataNodes: " + onEach[0] + " and " + onEach[1]);
      assertEquals(
          0, client.misdirectedRequestCount(), "the DataNode was known: never asked wrong");
      assertEquals(0, client.fallbackCount(FallbackReason.BLOCK_REFUSED));
    } finally {
      client.close();
    }
  }

  @Test
  void theAccessorFindsTheHolderWithAtMostOneRefusedRequestPerFile() throws Exception {
    String context = "multi-accessor";
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.set("scr.client.context", context);
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    Engine engine = ScrReplicaAccessorBuilder.engine(conf(context));
    List<String> order = engine.localSocketPaths();
    assertEquals(2, order.size(), "both DataNodes' sockets are found from the _PORT template");
    int expectedPinned = 0;
    long pinnedMisdirected = 0;
    int randomBlocks = 0;
    Random rnd = new Random(5);
    for (String name : FILES_WRITTEN.keySet()) {
      byte[] expect = FILES_WRITTEN.get(name);
      if (name.startsWith("/multi/pinned")) {
        String holder = DFS.dfs().socketPath(indexOf(blocks(name).get(0).getLocations()[0]));
        for (LocatedBlock lb : blocks(name)) {
          assertEquals(holder, DFS.dfs().socketPath(indexOf(lb.getLocations()[0])), "pinned");
        }
        if (!holder.equals(order.get(0))) {
          expectedPinned++; // the file's first block; its later blocks follow the file's hint
        }
      } else {
        randomBlocks += blocks(name).size();
      }
      long misdirectedBefore = engine.misdirectedRequestCount();
      try (FSDataInputStream in = fs.open(new Path(name))) {
        byte[] all = new byte[LEN];
        in.readFully(0, all);
        assertArrayEquals(expect, all, name);
        for (int i = 0; i < 20; i++) {
          int off = rnd.nextInt(LEN);
          byte[] buf = new byte[Math.min(LEN - off, 1 + rnd.nextInt(200_000))];
          in.readFully(off, buf);
          assertArrayEquals(Arrays.copyOfRange(expect, off, off + buf.length), buf, name + off);
        }
        long sc = ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
        long total = ((HdfsDataInputStream) in).getReadStatistics().getTotalBytesRead();
        assertEquals(total, sc, "every byte of " + name + " was read short-circuit");
      }
      if (name.startsWith("/multi/pinned")) {
        pinnedMisdirected += engine.misdirectedRequestCount() - misdirectedBefore;
      }
    }
    assertEquals(
        expectedPinned,
        pinnedMisdirected,
        "one refused request per pinned file held by the DataNode listed second, none per block");
    assertTrue(
        engine.misdirectedRequestCount() - pinnedMisdirected <= randomBlocks,
        "at most one refused request per randomly placed block");
    assertEquals(0, engine.fallbackCount(FallbackReason.BLOCK_REFUSED), "no read went stock");
    assertEquals(
        (PINNED_FILES + RANDOM_FILES) * BLOCKS_PER_FILE,
        engine.cacheStats().loadSuccessCount(),
        "one open per block");
  }

  @Test
  void scrFileSystemReadsBlocksOfEitherDataNode() throws Exception {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  c.set("scr.client.context", "multi-scrfs");
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    try {
      for (String name : FILES_WRITTEN.keySet()) {
        byte[] expect = FILES_WRITTEN.get(name);
        try (FSDataInputStream in = fs.open(new Path(name))) {
          byte[] all = new byte[LEN];
          in.readFully(0, all);
          assertArrayEquals(expect, all, name);
          assertEquals(
              LEN,
              ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead(),
              name);
        }
      }
    } finally {
      fs.close();
    }
  }

  private static int indexOf(DatanodeInfo dn) {
    List<DataNode> dns = DFS.dfs().cluster().getDataNodes();
    for (int i = 0; i < dns.size(); i++) {
      if (dns.get(i).getXferPort() == dn.getXferPort()) {
        return i;
      }
    }
    throw new AssertionError("no DataNode with transfer port " + dn.getXferPort());
  }
}
