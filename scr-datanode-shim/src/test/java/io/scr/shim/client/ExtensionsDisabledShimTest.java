package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.ReplicaLease;
import io.scr.core.ScrClient;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.shim.ScrShimKeys;
import io.scr.shim.ScrShimPlugin;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import io.scr.shm.ShmSupport;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.newsclub.net.unix.AFUNIXSocket;

/**
 * Mode B with {@code scr.shim.extensions.enabled=false} on the DataNode: the shim treats op 127 as
 * an unknown op and closes the connection, as a stock DataNode does, so the client's one HELLO
 * finds a stock peer and every release goes out as op 88, with nothing surfaced. The other mode B
 * cases are in {@link ExtensionsModeBTest}.
 */
class ExtensionsDisabledShimTest {
  private static final int BLOCK = 8192;
  private static final int BLOCKS = 40;
  private static final int CAPACITY = 2;

  static {
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(8192);
        Segment s = Segment.map(ShmId.random(), fd.fd(), 8192)) {
      s.slotCount();
      ShmSupport.isAvailable();
      AFUNIXSocket.newInstance().close();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setBoolean(ScrShimKeys.EXTENSIONS_ENABLED.name(), false))
          .buildExtension();

  @BeforeAll
  static void write() throws Exception {
    DFS.dfs().writeRandomFile("/ext/a", BLOCK * BLOCKS, 7);
    DFS.dfs().writeRandomFile("/ext/b", BLOCK * BLOCKS, 8);
  }

  private static Configuration conf(String context, boolean extensions) {
    Configuration c = DFS.dfs().clientConf();
    c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop on the client
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.setInt("scr.cache.capacity", CAPACITY);
    c.setBoolean("scr.client.extensions.enabled", extensions);
    return c;
  }

  static Map<String, Long> shimCounters() throws Exception {
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

  private static long shim(Map<String, Long> counters, String name) {
    return counters.getOrDefault(name, 0L);
  }

  /**
   * Leases every block of {@code file} from the shim, holding them all, then closes them in a
   * burst: the cache evicts all but {@link #CAPACITY}, and their slots go back to the pool. Returns
   * when the pool has told the DataNode every released slot.
   */
  static long leaseAllThenRelease(ScrClient client, String file) throws Exception {
    List<LocatedBlock> blocks =
        DFS.dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks(file, 0, (long) BLOCK * BLOCKS)
            .getLocatedBlocks();
    assertEquals(BLOCKS, blocks.size());
    String path = DFS.dfs().socketPath(0);
    long releasedBefore = released(client);
    List<ReplicaLease> leases = new ArrayList<>();
    try {
      for (LocatedBlock b : blocks) {
        ReplicaLease lease = client.lease(b.getBlock(), b.getBlockToken(), path, file);
        assertNotNull(lease, "short-circuit lease of " + b.getBlock());
        leases.add(lease);
      }
    } finally {
      leases.forEach(ReplicaLease::close);
    }
    // Every evicted replica's slot is back (a replica opened without a slot, when an allocation
    // timed out, has none to release) and the DataNode was told.
    awaitTrue(
        "the pool told the DataNode of every released slot",
        () -> inUse(client) <= CAPACITY && pending(client) == 0);
    return released(client) - releasedBefore;
  }

  private static long released(ScrClient client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.releases();
    }
    return n;
  }

  private static long inUse(ScrClient client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.slotsInUse();
    }
    return n;
  }

  private static long pending(ScrClient client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.slotsPendingRelease();
    }
    return n;
  }

  private static long releaseFailures(ScrClient client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.releaseFailures();
    }
    return n;
  }

  @Test
  void shimWithoutExtensionsIsAskedOnceAndGetsOp88() throws Exception {
    Map<String, Long> before = shimCounters();
    try (ScrClient client = ScrClient.acquire(conf("ext-shim-off", true))) {
      long released = leaseAllThenRelease(client, "/ext/a");
      released += leaseAllThenRelease(client, "/ext/b");
      ClientSnapshot s = client.metricsSnapshot();
      Map<String, Long> after = shimCounters();

      assertTrue(released > BLOCKS, "slots were released: " + released);
      assertEquals(1, client.extensions().probeCount(), "one HELLO, answered by a close");
      assertEquals(0, s.extensionPeers());
      assertEquals(0, s.extensionFailures());
      assertEquals(released, s.releaseRequestsOp88());
      assertEquals(0, s.releaseRequestsBatched());
      assertEquals(0, releaseFailures(client));
      assertEquals(1, shim(after, "rejections.unknown_op") - shim(before, "rejections.unknown_op"));
      assertEquals(
          released,
          shim(after, "requests.release_fds.success")
              - shim(before, "requests.release_fds.success"));
      for (io.scr.core.net.PathBackoff.Status b : client.backoffStatus()) {
        assertEquals(0, b.failures(), "no failure recorded: " + b);
      }
    }
  }

  private interface Condition {
    boolean holds() throws Exception;
  }

  /** Waits up to 60 s for the pool's background release, which has no hook to wait on. */
  private static void awaitTrue(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting until " + what);
      }
      Thread.sleep(20);
    }
  }
}
