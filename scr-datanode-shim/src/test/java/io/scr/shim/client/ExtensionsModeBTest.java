package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.ReplicaLease;
import io.scr.core.ScrClient;
import io.scr.core.metrics.ClientSnapshot;
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
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.newsclub.net.unix.AFUNIXSocket;

/**
 * Mode B: the client negotiates the shim's extensions (op 127 HELLO, once per socket path and
 * DataNode start) and then releases slots in batches (op-127 BATCH_RELEASE), counted on both sides;
 * with {@code scr.client.extensions.enabled=false} it never asks and uses op 88. Slots are released
 * by evicting replicas from a cache of capacity 2. The mode A counterpart (a stock DataNode: one
 * probe, op 88, nothing surfaced) is {@code io.scr.core.hdfs.ExtensionFallbackStockScrTest}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ExtensionsModeBTest {
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
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

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

  private static long freeSlots(ScrClient client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.slotsFree();
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
  @Order(1)
  void shimIsAskedOnceThenSlotsAreReleasedInBatches() throws Exception {
    Map<String, Long> before = shimCounters();
    try (ScrClient client = ScrClient.acquire(conf("ext-on", true))) {
      long released = leaseAllThenRelease(client, "/ext/a");
      released += leaseAllThenRelease(client, "/ext/b");
      ClientSnapshot s = client.metricsSnapshot();
      Map<String, Long> after = shimCounters();

      assertEquals(1, client.extensions().probeCount(), "one HELLO for the path");
      assertEquals(List.of(DFS.dfs().socketPath(0)), client.extensions().extendedPaths());
      assertEquals(1, s.extensionPeers());
      assertEquals(0, s.releaseRequestsOp88(), "no op 88 to a shim that batches");
      assertEquals(released, s.releasesBatched(), "every released slot went in a batch");
      assertTrue(
          s.releaseRequestsBatched() > 0 && s.releaseRequestsBatched() < released,
          "fewer round trips than slots: "
              + s.releaseRequestsBatched()
              + " requests for "
              + released
              + " slots");
      assertEquals(0, releaseFailures(client));
      assertEquals(0, s.extensionFailures());

      // The shim's books agree.
      assertEquals(
          1,
          shim(after, "requests.ext_hello.success") - shim(before, "requests.ext_hello.success"));
      assertEquals(
          s.releaseRequestsBatched(),
          shim(after, "requests.ext_batch_release.success")
              - shim(before, "requests.ext_batch_release.success"));
      assertEquals(
          0,
          shim(after, "requests.release_fds.success")
              - shim(before, "requests.release_fds.success"));
    }
  }

  @Test
  @Order(2)
  void disabledClientNeverAsksAndUsesOp88() throws Exception {
    Map<String, Long> before = shimCounters();
    try (ScrClient client = ScrClient.acquire(conf("ext-off", false))) {
      long released = leaseAllThenRelease(client, "/ext/a");
      ClientSnapshot s = client.metricsSnapshot();
      Map<String, Long> after = shimCounters();

      assertEquals(0, client.extensions().probeCount());
      assertEquals(0, s.extensionPeers());
      assertEquals(released, s.releaseRequestsOp88(), "one op 88 per slot");
      assertEquals(0, s.releaseRequestsBatched());
      assertEquals(0, releaseFailures(client));
      assertEquals(
          0,
          shim(after, "requests.ext_hello.success") - shim(before, "requests.ext_hello.success"));
      assertEquals(
          released,
          shim(after, "requests.release_fds.success")
              - shim(before, "requests.release_fds.success"));
    }
  }

  @Test
  @Order(3)
  void restartedDataNodeIsAskedAgainOnce() throws Exception {
    Configuration conf = conf("ext-restart", true);
    // Segment requests fail while the DataNode is down; without this the path would read without
    // slots (nothing to release) for the 60 s shared-memory backoff.
    conf.setInt("scr.backoff.shm.seconds", 0);
    try (ScrClient client = ScrClient.acquire(conf)) {
      leaseAllThenRelease(client, "/ext/a");
      assertEquals(1, client.extensions().probeCount());

      assertTrue(DFS.dfs().cluster().restartDataNode(0, true), "restart DataNode 0");
      DFS.dfs().cluster().waitActive();
      String path = DFS.dfs().socketPath(0);
      LocatedBlock first = DFS.dfs().fileSystem().getClient().getLocatedBlocks("/ext/b", 0).get(0);
      // The restart cut the client's connections and segments: it backs off briefly, then reads.
      awaitTrue(
          "a short-circuit lease from the restarted DataNode",
          () -> {
            try (ReplicaLease lease = client.lease(first.getBlock(), first.getBlockToken(), path)) {
              return lease != null;
            }
          });
      awaitTrue("free slots of a segment of the restarted DataNode", () -> freeSlots(client) > 0);
      long releasedBefore = client.metricsSnapshot().releasesBatched();
      long released = leaseAllThenRelease(client, "/ext/b");
      assertTrue(released > BLOCKS / 2, "slots were released after the restart: " + released);
      ClientSnapshot s = client.metricsSnapshot();

      assertEquals(2, client.extensions().probeCount(), "asked once more: a new DataNode start");
      assertEquals(1, shim(shimCounters(), "requests.ext_hello.success"), "the new shim's books");
      assertTrue(
          s.releasesBatched() - releasedBefore >= released - CAPACITY, "batched after the restart");
      assertEquals(0, s.extensionFailures());
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
