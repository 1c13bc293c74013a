package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An engine that closes with many open replicas gives its slots back by returning its segments
 * whole, and tells the DataNode nothing slot by slot. Before, the slot pools' maintenance threads
 * told the DataNode every slot the cache closed (a closing client with 2,048 replicas: 16 batched
 * releases of 128 on the shim's workers, or 2,048 op-88 requests to a stock DataNode) while it
 * served other clients' opens; returning a segment makes the DataNode drop all its slots anyway, as
 * a stock DataNode does when a segment's socket closes.
 */
class EngineCloseModeBTest {
  private static final int BLOCK = 4096;
  private static final int BLOCKS = 320; // three segments of 128 slots
  private static final String FILE = "/many-blocks";

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  @BeforeAll
  static void write() throws Exception {
    DFS.dfs().writeRandomFile(FILE, BLOCK * BLOCKS, 16);
  }

  private static Map<String, Long> shimCounters() throws Exception {
    return ShimMetricsClusterTest.plugin(DFS.dfs().cluster().getDataNodes().get(0)).counters();
  }

  /** Every request of {@code op} the shim answered so far, whatever its status. */
  private static long requests(Map<String, Long> counters, String op) {
    return counters.entrySet().stream()
        .filter(e -> e.getKey().startsWith("requests." + op + "."))
        .mapToLong(Map.Entry::getValue)
        .sum();
  }

  /**
   * Five engines in turn, each closed with {@value #BLOCKS} idle replicas. Whether the old order
   * told releases depended on the cache's close outlasting the pools' 2 ms release batch delay: one
   * engine did in about half the runs (seen: 1 batched release), so five make it all but certain.
   */
  @Test
  void closingAnEngineReturnsItsSegmentsWholeAndReleasesNoSlotOneByOne() throws Exception {
    for (int round = 0; round < 5; round++) {
      closeAnEngineWithManyReplicas("engine-close-" + round);
    }
  }

  private void closeAnEngineWithManyReplicas(String context) throws Exception {
    Configuration c = DFS.dfs().clientConf();
    c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop on the client
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    // Room for every replica whatever the fd limit: sized from a limit of 1024 the cache would
    // keep 64 replicas and close the rest, so fewer than BLOCKS slots would be in use.
    c.setInt("scr.cache.capacity", BLOCKS);
    c.setLong("scr.cache.fd.budget", 2L * BLOCKS);
    List<LocatedBlock> blocks =
        DFS.dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks(FILE, 0, (long) BLOCK * BLOCKS)
            .getLocatedBlocks();
    assertEquals(BLOCKS, blocks.size());
    Map<String, Long> before = shimCounters();

    Engine client = Engine.acquire(c);
    try {
      String path = client.socketPathFor(blocks.get(0).getLocations()[0]);
      for (LocatedBlock lb : blocks) {
        ReplicaLease lease = client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null);
        assertNotNull(lease, "a lease of " + lb.getBlock());
        lease.close(); // idle in the cache, its slot registered at the shim
      }
      SlotPoolStats pool = client.slotPoolStats().get(0);
      assertTrue(pool.slotsInUse() >= BLOCKS, pool.toString());
      Map<String, Long> open = shimCounters();
      assertEquals(BLOCKS, open.get("live.slots") - before.get("live.slots"), open.toString());
      assertTrue(open.get("live.segments") - before.get("live.segments") >= 3, open.toString());
    } finally {
      client.close();
    }

    // The shim drops each segment when its connection closes (after close returns, on its loop).
    long deadline = System.nanoTime() + 10_000_000_000L;
    Map<String, Long> after = shimCounters();
    while ((!after.get("live.slots").equals(before.get("live.slots"))
            || !after.get("live.segments").equals(before.get("live.segments")))
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
      after = shimCounters();
    }
    assertEquals(before.get("live.slots"), after.get("live.slots"), "slots left: " + after);
    assertEquals(before.get("live.segments"), after.get("live.segments"), "segments: " + after);
    assertEquals(
        0,
        requests(after, "ext_batch_release") - requests(before, "ext_batch_release"),
        "batched slot releases sent by a closing engine");
    assertEquals(
        0,
        requests(after, "release_fds") - requests(before, "release_fds"),
        "op-88 slot releases sent by a closing engine");
  }
}
