package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.core.stats.BackoffStatus;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.LogCapture;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.log4j.Level;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A: against a stock DataNode (libhadoop) the client asks once whether the peer speaks the scr
 * extensions (HELLO, a release of a slot no DataNode registers, which the DataNode refuses as any
 * unknown slot), then releases every slot with op 88, and none of it shows: the DataNode logs no
 * error, every lease succeeds, no release fails, no backoff, no fallback. The mode B counterpart is
 * {@code io.scr.shim.client.ExtensionsModeBTest}.
 */
class ExtensionFallbackStockScrTest {
  private static final int BLOCK = 8192;
  private static final int BLOCKS = 40;
  private static final int CAPACITY = 2;

  static {
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @BeforeAll
  static void write() throws Exception {
    DFS.dfs().writeRandomFile("/ext/a", BLOCK * BLOCKS, 7);
    DFS.dfs().writeRandomFile("/ext/b", BLOCK * BLOCKS, 8);
  }

  @Test
  void stockDataNodeIsAskedOnceAndGetsOp88WithNothingSurfaced() throws Exception {
    Configuration c = DFS.dfs().clientConf();
    c.set("scr.client.context", "ext-stock");
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.setInt("scr.cache.capacity", CAPACITY);
    try (LogCapture dataNodeErrors =
            LogCapture.of("org.apache.hadoop.hdfs.server.datanode", Level.ERROR);
        Engine client = Engine.acquire(c)) {
      long released = leaseAllThenRelease(client, "/ext/a");
      released += leaseAllThenRelease(client, "/ext/b");
      ClientSnapshot s = client.metricsSnapshot();

      assertTrue(released > BLOCKS, "slots were released: " + released);
      assertEquals(1, client.extensions().probeCount(), "exactly one probe for the path");
      assertEquals(List.of(), dataNodeErrors.all(), "errors the DataNode logged");
      assertEquals(0, s.extensionPeers());
      assertEquals(0, s.extensionFailures());
      assertEquals(released, s.releaseRequestsOp88(), "one op 88 per released slot");
      assertEquals(0, s.releaseRequestsBatched());
      for (SlotPoolStats p : client.slotPoolStats()) {
        assertEquals(0, p.releaseFailures(), p.toString());
        assertEquals(0, p.segmentsDisconnected(), "the probe cost no segment: " + p);
      }
      for (BackoffStatus b : client.backoffStatus()) {
        assertEquals(0, b.failures(), "no failure recorded: " + b);
      }
      for (FallbackReason r : FallbackReason.values()) {
        assertEquals(0, client.fallbackCount(r), "fallbacks for " + r);
      }
    }
  }

  /**
   * Leases every block of {@code file}, holding them all, then closes them: the cache (capacity
   * {@value #CAPACITY}) evicts the rest and their slots are released. Returns the slots released
   * once the pool has told the DataNode of all of them.
   */
  private static long leaseAllThenRelease(Engine client, String file) throws Exception {
    List<LocatedBlock> blocks =
        DFS.dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks(file, 0, (long) BLOCK * BLOCKS)
            .getLocatedBlocks();
    assertEquals(BLOCKS, blocks.size());
    String path = DFS.dfs().socketPath(0);
    long before = released(client);
    List<ReplicaLease> leases = new ArrayList<>();
    try {
      for (LocatedBlock b : blocks) {
        ReplicaLease lease = client.lease(b.getBlock(), b.getBlockToken(), path, file, null);
        assertNotNull(lease, "short-circuit lease of " + b.getBlock());
        leases.add(lease);
      }
    } finally {
      leases.forEach(ReplicaLease::close);
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    // Every evicted replica's slot is back (a replica opened without a slot, when an allocation
    // timed out, has none to release) and the DataNode was told.
    while (inUse(client) > CAPACITY || pending(client) > 0) {
      if (System.nanoTime() - deadline > 0) {
        fail("the pool did not tell the DataNode of the released slots: " + client.slotPoolStats());
      }
      Thread.sleep(20); // the pool's maintenance thread releases in the background: no hook
    }
    return released(client) - before;
  }

  private static long released(Engine client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.releases();
    }
    return n;
  }

  private static long inUse(Engine client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.slotsInUse();
    }
    return n;
  }

  private static long pending(Engine client) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += s.slotsPendingRelease();
    }
    return n;
  }
}
