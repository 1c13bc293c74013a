package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.shim.ScrShimPlugin;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;

/**
 * What the mode B extension tests ({@link ExtensionsModeBTest}, {@link ExtensionsDisabledShimTest})
 * share: two files of {@value #BLOCKS} blocks on a one-shim cluster, a client with a cache of
 * {@value #CAPACITY}, the shim plugin's counters, and a burst of leases whose slots the pool then
 * releases.
 */
abstract class ShimExtensionsTestBase {
  static final int BLOCK = 8192;
  static final int BLOCKS = 40;
  static final int CAPACITY = 2;

  static {
    // The JVM-wide singletons before the cluster's leak baseline.
    io.scr.shim.JvmSingletons.warm();
  }

  /** The test class's cluster. */
  abstract MiniDfs dfs();

  static void writeFiles(MiniDfs dfs) throws IOException {
    dfs.writeRandomFile("/ext/a", BLOCK * BLOCKS, 7);
    dfs.writeRandomFile("/ext/b", BLOCK * BLOCKS, 8);
  }

  Configuration conf(String context, boolean extensions) {
    Configuration c = dfs().clientConf();
    c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop on the client
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.setInt("scr.cache.capacity", CAPACITY);
    c.setBoolean("scr.client.extensions.enabled", extensions);
    return c;
  }

  /** The counters of the shim plugin of DataNode 0. */
  Map<String, Long> shimCounters() throws Exception {
    DataNode dn = dfs().cluster().getDataNodes().get(0);
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

  static long shim(Map<String, Long> counters, String name) {
    return counters.getOrDefault(name, 0L);
  }

  /**
   * Leases every block of {@code file} from the shim, holding them all, then closes them in a
   * burst: the cache evicts all but {@link #CAPACITY}, and their slots go back to the pool. Returns
   * when the pool has told the DataNode every released slot, with the number released.
   */
  long leaseAllThenRelease(Engine client, String file) throws Exception {
    List<LocatedBlock> blocks =
        dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks(file, 0, (long) BLOCK * BLOCKS)
            .getLocatedBlocks();
    assertEquals(BLOCKS, blocks.size());
    String path = dfs().socketPath(0);
    long releasedBefore = released(client);
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
    // Every evicted replica's slot is back (a replica opened without a slot, when an allocation
    // timed out, has none to release) and the DataNode was told.
    awaitTrue(
        "the pool told the DataNode of every released slot",
        () -> inUse(client) <= CAPACITY && pending(client) == 0);
    return released(client) - releasedBefore;
  }

  static long released(Engine client) {
    return sum(client, SlotPoolStats::releases);
  }

  static long inUse(Engine client) {
    return sum(client, SlotPoolStats::slotsInUse);
  }

  static long freeSlots(Engine client) {
    return sum(client, SlotPoolStats::slotsFree);
  }

  static long pending(Engine client) {
    return sum(client, SlotPoolStats::slotsPendingRelease);
  }

  static long releaseFailures(Engine client) {
    return sum(client, SlotPoolStats::releaseFailures);
  }

  private static long sum(Engine client, ToLongFunction<SlotPoolStats> stat) {
    long n = 0;
    for (SlotPoolStats s : client.slotPoolStats()) {
      n += stat.applyAsLong(s);
    }
    return n;
  }

  interface Condition {
    boolean holds() throws Exception;
  }

  /** Waits up to 60 s for the pool's background release, which has no hook to wait on. */
  static void awaitTrue(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting until " + what);
      }
      Thread.sleep(20);
    }
  }
}
