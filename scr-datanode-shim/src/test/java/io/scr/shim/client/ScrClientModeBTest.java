package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.internal.engine.Engine;
import io.scr.shim.ScrShimKeys;
import io.scr.shim.ScrShimPlugin;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.ResourceSnapshot;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockManagerTestUtil;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B: the scr client ({@link Engine} and the replica accessor) against a DataNode with the shim
 * and no libhadoop: leases, fds and slots come from the shim's socket. One cluster for every check.
 * (This class lives in scr-datanode-shim because scr-core cannot depend on the shim.)
 */
class ScrClientModeBTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK + 300_123; // three blocks, the last partial

  static {
    io.scr.shim.JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setLong(ScrShimKeys.INVALIDATION_INTERVAL_MS.name(), 100))
          .buildExtension();

  private static byte[] data;

  @BeforeAll
  static void write() throws Exception {
    data = DFS.dfs().writeRandomFile("/b", LEN, 43);
  }

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static Configuration conf(String context) {
    Configuration c = DFS.dfs().clientConf();
    c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop on the client
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    return c;
  }

  private static List<LocatedBlock> blocks(String file, long len) throws Exception {
    return DFS.dfs().fileSystem().getClient().getLocatedBlocks(file, 0, len).getLocatedBlocks();
  }

  private static Map<String, Long> shimCounters() throws Exception {
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(0);
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

  @Test
  void leasesReadByteIdenticalOnSlotsTheShimRegistered() throws Exception {
    ResourceSnapshot before = ResourceSnapshot.take();
    Engine client = Engine.acquire(conf("modeb-leases"));
    try {
      List<LocatedBlock> blocks = blocks("/b", LEN);
      assertEquals(3, blocks.size());
      String path = client.socketPathFor(blocks.get(0).getLocations()[0]);
      assertEquals(DFS.dfs().socketPath(0), path, "the shim's socket");

      // Slots are real: while a lease is held the client has a segment and a slot in use, and
      // the shim has them registered.
      ReplicaLease held =
          client.lease(blocks.get(0).getBlock(), blocks.get(0).getBlockToken(), path, null, null);
      assertNotNull(held);
      SlotPoolStats pool = client.slotPoolStats().get(0);
      assertTrue(pool.segments() > 0, pool.toString());
      assertTrue(pool.slotsInUse() > 0, pool.toString());
      Map<String, Long> shim = shimCounters();
      assertTrue(shim.get("live.segments") > 0, shim.toString());
      assertTrue(shim.get("live.slots") > 0, shim.toString());
      held.close();

      Random rnd = new Random(8);
      ReplicaLease spare = null;
      int reads = 0;
      for (int i = 0; i < 300; i++) {
        LocatedBlock lb = blocks.get(rnd.nextInt(blocks.size()));
        ReplicaLease lease = client.lease(lb.getBlock(), lb.getBlockToken(), path, "/b", spare);
        assertNotNull(lease, "lease of " + lb.getBlock());
        if (spare != null) {
          assertSame(spare, lease);
        }
        spare = lease;
        try {
          long off = rnd.nextInt((int) lease.length());
          if (i % 4 == 0) {
            off -= off % 512; // chunk-aligned
          }
          int len = 1 + rnd.nextInt(i % 5 == 0 ? 150_000 : 9000);
          int want = (int) Math.min(len, lease.length() - off);
          byte[] got = read(lease, off, want, rnd.nextBoolean(), i % 3);
          int start = (int) (lb.getStartOffset() + off);
          assertArrayEquals(Arrays.copyOfRange(data, start, start + want), got, lb + " @" + off);
          reads++;
        } finally {
          lease.close();
        }
      }
      assertEquals(300, reads);
      assertEquals(3, client.cacheStats().missCount(), "one open per block, then hits");
      assertEquals(0, client.fallbackCount(FallbackReason.IO_ERROR));
    } finally {
      client.close();
    }
    List<String> leaks = new ArrayList<>(before.leakedSince(Duration.ofSeconds(10)));
    String self = "/proc/" + ProcessHandle.current().pid() + "/fd";
    leaks.removeIf(l -> l.endsWith(self));
    // The shim's threads are the DataNode's, not the client's: its workers start on demand (a
    // release or segment request, or an fd request moved off a slow event loop) and idle out only
    // after 30 s. A worker started during this test left it failing on a loaded CI host.
    leaks.removeIf(l -> l.startsWith("thread 'scr-shim-"));
    assertTrue(leaks.isEmpty(), "ScrClient.close() left " + leaks);
  }

  @Test
  void aReplicaTheShimInvalidatesIsNotServedAgainAndItsFdsAreClosed() throws Exception {
    String file = "/b-stale";
    byte[] bytes = DFS.dfs().writeRandomFile(file, 100_000, 9);
    LocatedBlock lb = blocks(file, 100_000).get(0);
    File blockFile = DFS.dfs().cluster().getBlockFile(0, lb.getBlock());
    assertNotNull(blockFile);
    Engine client = Engine.acquire(conf("modeb-stale"));
    ReplicaLease held = null;
    try {
      String path = client.socketPathFor(lb.getLocations()[0]);
      held = client.lease(lb.getBlock(), lb.getBlockToken(), path, file, null);
      assertNotNull(held);
      assertTrue(openFdTargets().contains(blockFile.getPath()));

      assertTrue(DFS.dfs().fileSystem().delete(new Path(file), false));
      awaitTrue(
          "the shim cleared VALID on our slot",
          () -> {
            BlockManagerTestUtil.computeAllPendingWork(
                DFS.dfs().cluster().getNamesystem().getBlockManager());
            DFS.dfs().cluster().triggerHeartbeats();
            ReplicaLease probe = client.leaseIfCached(lb.getBlock(), file);
            if (probe == null) {
              return true; // cached but no longer valid
            }
            probe.close();
            return false;
          });

      assertNull(client.lease(lb.getBlock(), lb.getBlockToken(), path, file, null), "not served");
      assertEquals(1, client.fallbackCount(FallbackReason.BLOCK_REFUSED));
      byte[] got = read(held, 10, 5000, true, 0);
      assertArrayEquals(Arrays.copyOfRange(bytes, 10, 5010), got, "the old lease still reads");
      held.close();
      awaitTrue(
          "the closer closed the deleted replica's fds",
          () -> openFdTargets().stream().noneMatch(t -> t.startsWith(blockFile.getPath())));
    } finally {
      if (held != null) {
        held.close(); // idempotent
      }
      client.close();
    }
  }

  @Test
  void theAccessorReadsShortCircuitThroughTheShim() throws Exception {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.set("scr.client.context", "modeb-accessor");
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    Random rnd = new Random(12);
    try (FSDataInputStream in = fs.open(new Path("/b"))) {
      for (int i = 0; i < 40; i++) {
        int off = rnd.nextInt(LEN);
        byte[] buf = new byte[Math.min(LEN - off, 1 + rnd.nextInt(300_000))];
        in.readFully(off, buf);
        assertArrayEquals(Arrays.copyOfRange(data, off, off + buf.length), buf, "pread " + off);
      }
      byte[] all = new byte[LEN];
      in.seek(0);
      in.readFully(all);
      assertArrayEquals(data, all);
      HdfsDataInputStream hin = (HdfsDataInputStream) in;
      long total = hin.getReadStatistics().getTotalBytesRead();
      assertEquals(
          total, hin.getReadStatistics().getTotalShortCircuitBytesRead(), "all short-circuit");
      assertTrue(total >= LEN);
    }
    Engine engine = Engine.running(conf("modeb-accessor"));
    assertEquals(3, engine.cacheStats().loadSuccessCount(), "one open per block");
    assertTrue(engine.slotPoolStats().get(0).allocations() >= 3, "each open took a slot");
  }

  private static byte[] read(ReplicaLease lease, long off, int want, boolean verify, int mode)
      throws IOException {
    byte[] out = new byte[want];
    ByteBuffer direct = mode == 1 ? ByteBuffer.allocateDirect(want) : null;
    ByteBuffer heap = mode == 2 ? ByteBuffer.allocate(want) : null;
    int done = 0;
    while (done < want) {
      int n;
      if (mode == 0) {
        n = lease.read(off + done, out, done, want - done, verify);
      } else if (mode == 1) {
        n = lease.read(off + done, direct, verify);
      } else {
        n = lease.read(off + done, heap, verify);
      }
      assertTrue(n > 0, "read returned " + n);
      done += n;
    }
    if (mode == 1) {
      direct.flip().get(out);
    } else if (mode == 2) {
      heap.flip().get(out);
    }
    return out;
  }

  private static List<String> openFdTargets() {
    List<String> out = new ArrayList<>();
    File[] fds = new File("/proc/self/fd").listFiles();
    if (fds != null) {
      for (File fd : fds) {
        try {
          out.add(Files.readSymbolicLink(fd.toPath()).toString());
        } catch (IOException e) {
          // closed meanwhile (the listing's own fd)
        }
      }
    }
    return out;
  }

  private interface Condition {
    boolean holds() throws Exception;
  }

  /** Waits up to 60 s for something the DataNode does, with no hook to wait on. */
  private static void awaitTrue(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting until " + what);
      }
      Thread.sleep(50);
    }
  }
}
