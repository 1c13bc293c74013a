package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B: the client negotiates the shim's extensions (op 127 HELLO, once per socket path and
 * DataNode start) and then releases slots in batches (op-127 BATCH_RELEASE), counted on both sides;
 * with {@code scr.client.extensions.enabled=false} it never asks and uses op 88. Slots are released
 * by evicting replicas from a cache of capacity 2. The mode A counterpart (a stock DataNode: one
 * probe, op 88, nothing surfaced) is {@code io.scr.core.hdfs.ExtensionFallbackStockScrTest}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ExtensionsModeBTest extends ShimExtensionsTestBase {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  @BeforeAll
  static void write() throws Exception {
    writeFiles(DFS.dfs());
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Test
  @Order(1)
  void shimIsAskedOnceThenSlotsAreReleasedInBatches() throws Exception {
    Map<String, Long> before = shimCounters();
    try (Engine client = Engine.acquire(conf("ext-on", true))) {
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
    try (Engine client = Engine.acquire(conf("ext-off", false))) {
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
    try (Engine client = Engine.acquire(conf)) {
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
            try (ReplicaLease lease =
                client.lease(first.getBlock(), first.getBlockToken(), path, null, null)) {
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
}
