package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Corrupt replicas read through the replica accessor are reported to the NameNode, as Hadoop's
 * {@code TestClientReportBadBlock} checks for stock's block readers: three DataNodes on this host,
 * replication 3, two replicas corrupted on disk, the file read by the stock {@code
 * DistributedFileSystem} with {@link ScrReplicaAccessorBuilder} configured. The two corrupt
 * replicas are open in the accessor's engine before the read, so the read meets both before the
 * good one (the accessor serves a replica it has open first, whichever DataNode the stock stream
 * chose). The NameNode must then count exactly those two as corrupt and list only the good
 * location; with all three corrupt, nothing may be reported (stock's rule: the client may be at
 * fault).
 *
 * <p>Run against a stock DataNode (mode A, scr-core) and the scr shim (mode B, scr-datanode-shim).
 */
public abstract class AbstractAccessorCorruptReplicaReportTest {
  protected static final int BLOCK = 1 << 20;
  protected static final int REPLICATION = 3;

  /** The cluster's settings subclasses start their cluster with. */
  protected static final Consumer<Configuration> CLUSTER =
      c -> c.setInt("dfs.replication", REPLICATION);

  private static final AtomicInteger CONTEXTS = new AtomicInteger();

  private FileSystem stock;
  private Engine engine;

  /** The running cluster: three DataNodes, replication 3. */
  protected abstract MiniDfs dfs();

  @BeforeEach
  void openAccessorFileSystem() {
    String context = "accessor-corrupt-" + CONTEXTS.incrementAndGet();
    Consumer<Configuration> accessor =
        c -> {
          c.setBoolean("dfs.client.read.shortcircuit", false); // only scr reads locally
          c.set(
              "dfs.client.replica.accessor.builder.classes",
              ScrReplicaAccessorBuilder.class.getName());
          c.setBoolean("fs.hdfs.impl.disable.cache", true);
          // A read that finds every replica bad gives up at once rather than after stock's waits.
          c.setInt("dfs.client.max.block.acquire.failures", 1);
          c.setInt("dfs.client.retry.window.base", 1);
          c.set("scr.client.context", context);
          c.setInt("scr.metrics.summary.interval.seconds", 0);
          if (dfs().mode() == DataNodeMode.SHIM) {
            c.set("scr.client.socket.paths", c.get(MiniDfs.SHIM_SOCKET_PATH_KEY));
          }
        };
    stock = dfs().newFileSystem(accessor);
    Configuration conf = dfs().clientConf();
    accessor.accept(conf);
    engine = ScrReplicaAccessorBuilder.engine(conf);
  }

  @AfterEach
  void closeAccessorFileSystem() throws IOException {
    stock.close();
    ScrReplicaAccessorBuilder.releaseAll();
  }

  @Test
  void twoCorruptReplicasMetByAPositionalReadAreReported() throws Exception {
    String file = "/accessor-corrupt/pread";
    byte[] expect = dfs().writeRandomFile(file, BLOCK, 53);
    LocatedBlock lb = firstBlock(file);
    corruptAndOpen(lb, 0, 1);

    byte[] all = new byte[BLOCK];
    try (FSDataInputStream in = stock.open(new Path(file))) {
      in.readFully(0, all);
    }

    assertArrayEquals(expect, all, "the good replica's bytes");
    assertEquals(2, engine.metricsSnapshot().checksumFailures(), "both corrupt replicas were read");
    assertEquals(
        ports(0, 1), corruptReplicaPorts(lb.getBlock()), "the NameNode counts both corrupt");
    assertEquals(
        1, firstBlock(file).getLocations().length, "the NameNode lists only the good replica");
  }

  @Test
  void twoCorruptReplicasMetByAStatefulReadAreReported() throws Exception {
    String file = "/accessor-corrupt/stateful";
    byte[] expect = dfs().writeRandomFile(file, BLOCK, 59);
    LocatedBlock lb = firstBlock(file);
    corruptAndOpen(lb, 1, 2);

    byte[] all = new byte[BLOCK];
    try (FSDataInputStream in = stock.open(new Path(file))) {
      int off = 0;
      while (off < all.length) {
        int n = in.read(all, off, Math.min(64 * 1024, all.length - off));
        if (n < 0) {
          break;
        }
        off += n;
      }
    }

    assertArrayEquals(expect, all, "the good replica's bytes");
    assertEquals(
        ports(1, 2), corruptReplicaPorts(lb.getBlock()), "the NameNode counts both corrupt");
    assertEquals(1, firstBlock(file).getLocations().length);
  }

  @Test
  void noReplicaIsReportedWhenEveryReplicaIsCorrupt() throws Exception {
    String file = "/accessor-corrupt/all";
    dfs().writeRandomFile(file, BLOCK, 61);
    LocatedBlock lb = firstBlock(file);
    corruptAndOpen(lb, 0, 1, 2);

    try (FSDataInputStream in = stock.open(new Path(file))) {
      assertThrows(IOException.class, () -> in.readFully(0, new byte[BLOCK]));
    }

    assertEquals(3, engine.metricsSnapshot().checksumFailures(), "every replica was read");
    assertEquals(List.of(), corruptReplicaPorts(lb.getBlock()), "none reported, as stock");
    assertEquals(REPLICATION, firstBlock(file).getLocations().length);
  }

  /**
   * Corrupts the replicas on DataNodes {@code indexes} and opens each in the accessor's engine, so
   * the next read meets them before any other replica.
   */
  private void corruptAndOpen(LocatedBlock lb, int... indexes)
      throws IOException, InterruptedException {
    for (int index : indexes) {
      corrupt(lb.getBlock(), index);
      String path = dfs().socketPath(index);
      // On a loaded machine the engine may judge a DataNode unwell for a moment (no probe answer
      // within 200 ms) and refuse new opens there until a probe answers: bounded retries.
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
      ReplicaLease lease = engine.lease(lb.getBlock(), lb.getBlockToken(), path, "warm-up", null);
      while (lease == null && System.nanoTime() < deadline) {
        Thread.sleep(50); // the health state has no listener to wait on
        lease = engine.lease(lb.getBlock(), lb.getBlockToken(), path, "warm-up", null);
      }
      assertNotNull(lease, "lease from " + path);
      lease.close();
    }
  }

  /** Overwrites 64 bytes at block offset 4000 of DataNode {@code index}'s replica, in place. */
  private void corrupt(ExtendedBlock block, int index) throws IOException {
    File f = dfs().cluster().getBlockFile(index, block);
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

  private LocatedBlock firstBlock(String file) throws IOException {
    return dfs().fileSystem().getClient().getLocatedBlocks(file, 0, 1).getLocatedBlocks().get(0);
  }

  private List<Integer> ports(int... indexes) {
    TreeSet<Integer> ports = new TreeSet<>();
    for (int index : indexes) {
      ports.add(dfs().cluster().getDataNodes().get(index).getXferPort());
    }
    return new ArrayList<>(ports);
  }

  /** Transfer ports of the DataNodes whose replica of {@code block} the NameNode marks corrupt. */
  private List<Integer> corruptReplicaPorts(ExtendedBlock block) {
    Collection<DatanodeDescriptor> corrupt =
        dfs().cluster().getNamesystem().getBlockManager().getCorruptReplicas(block.getLocalBlock());
    TreeSet<Integer> ports = new TreeSet<>();
    if (corrupt != null) {
      for (DatanodeDescriptor d : corrupt) {
        ports.add(d.getXferPort());
      }
    }
    return new ArrayList<>(ports);
  }
}
