package io.scr.core.internal.replica;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.Ticker;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.net.DomainConnection;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.SegmentConnections;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.FailureClass;
import io.scr.core.stats.HealthState;
import io.scr.shm.Segment;
import io.scr.shm.Slot;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Open replicas outlive their DataNode, against a real stock DataNode (mode A): what a closed
 * segment means for the replicas holding its slots. The segment's connection is ended from the
 * client's side, so the slots stay as the DataNode left them (VALID, as after a kill -9), or the
 * DataNode is made to tear the segment down (stock's {@code removeShm}: every slot invalidated,
 * then the connection closed, as in its clean shutdown). The DataNode itself stays up, so the
 * re-validation that follows is the one a restarted DataNode gets.
 */
class OrphanedReplicasStockScrTest {
  static {
    io.scr.core.hdfs.JvmSingletonsAccess.initialize();
  }

  private static final int BLOCK = 64 * 1024;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private final ClientCounters counters = new ClientCounters();

  private ReplicaManager manager(String name, boolean outlive) {
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    for (FailureClass c : FailureClass.values()) {
      base.put(c, 1);
    }
    ReplicaManager m =
        ReplicaManager.newBuilder(
                name,
                DomainSocketPool.newBuilder().build(),
                new PathBackoff(Ticker.systemTicker(), base, 10))
            .counters(counters)
            .outliveDataNode(outlive)
            .build();
    try {
      awaitTrialOver(m);
    } catch (Exception e) {
      m.close();
      throw new AssertionError(e);
    }
    return m;
  }

  /**
   * Waits until the DataNode's health (process-wide) is past a trial an earlier test left: a
   * segment this class closes makes the DataNode suspect, and the probe's answer puts it on trial
   * until one request, sent off the read path, is answered. A lease of a block it does not hold
   * offers that request (a refusal is an answer).
   */
  private static void awaitTrialOver(ReplicaManager m) throws Exception {
    String path = DFS.dfs().socketPath(0);
    ExtendedBlock none =
        new ExtendedBlock(DFS.dfs().cluster().getNamesystem().getBlockPoolId(), Long.MAX_VALUE);
    long start = System.nanoTime();
    while (m.health().state(path) != HealthState.HEALTHY || m.health().onTrial(path)) {
      if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(20)) {
        throw new AssertionError("DataNode health still " + m.health().snapshot());
      }
      try {
        ReplicaLease l = m.source().lease(none, new Token<>(), path, "/none", null, null);
        if (l != null) {
          l.close();
        }
      } catch (org.apache.hadoop.security.token.SecretManager.InvalidToken e) {
        // an answer too
      }
      TimeUnit.MILLISECONDS.sleep(5);
    }
  }

  /** The open replicas of {@code file}'s blocks, each read once through {@code m}. */
  private static List<Replica> open(ReplicaManager m, String file, byte[] data) throws Exception {
    MiniDfs dfs = DFS.dfs();
    List<Replica> out = new ArrayList<>();
    for (LocatedBlock lb :
        dfs.fileSystem().getClient().getLocatedBlocks(file, 0).getLocatedBlocks()) {
      out.add(readBlock(m, file, lb, data));
    }
    return out;
  }

  /** Reads {@code lb} whole through a lease and checks its bytes; returns the leased replica. */
  private static Replica readBlock(ReplicaManager m, String file, LocatedBlock lb, byte[] data)
      throws Exception {
    ReplicaLease lease =
        m.source()
            .lease(lb.getBlock(), lb.getBlockToken(), DFS.dfs().socketPath(0), file, null, null);
    assertNotNull(lease, "a short-circuit lease of " + lb.getBlock());
    try {
      int len = (int) lb.getBlockSize();
      ByteBuffer buf = ByteBuffer.allocate(len);
      while (buf.hasRemaining()) {
        int n = lease.read(buf.position(), buf, true);
        assertTrue(n > 0, "read of " + lb.getBlock());
      }
      int start = (int) lb.getStartOffset();
      assertArrayEquals(Arrays.copyOfRange(data, start, start + len), buf.array());
      return ((LeasedReplica) lease).value();
    } finally {
      lease.close();
    }
  }

  private static List<LocatedBlock> blocks(String file) throws Exception {
    return DFS.dfs().fileSystem().getClient().getLocatedBlocks(file, 0).getLocatedBlocks();
  }

  private static Segment oneSegment(List<Replica> replicas) {
    Segment s = replicas.get(0).slot().segment();
    for (Replica r : replicas) {
      assertSame(s, r.slot().segment(), "the replicas share one segment");
    }
    return s;
  }

  private static long waitFor(BooleanSupplier condition) throws InterruptedException {
    long start = System.nanoTime();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(20)) {
        return -1;
      }
      TimeUnit.MILLISECONDS.sleep(5); // the re-validation thread has no latch to wait on
    }
    return System.nanoTime() - start;
  }

  @Test
  void aSegmentClosedWithItsSlotsValidLeavesItsReplicasReadingUntilTheDataNodeVouchesAgain()
      throws Exception {
    String file = "/outlive/valid";
    byte[] data = DFS.dfs().writeRandomFile(file, 3 * BLOCK, 1);
    try (ReplicaManager m = manager("outlive-valid", true)) {
      List<Replica> replicas = open(m, file, data);
      Segment segment = oneSegment(replicas);
      List<Slot> before = new ArrayList<>();
      replicas.forEach(r -> before.add(r.slot()));
      long loads = m.cacheStats().loadSuccessCount();
      DomainConnection c = m.endpoint(DFS.dfs().socketPath(0)).segmentConnection(segment.id());
      long suspected =
          m.health().of(DFS.dfs().socketPath(0)).status().transitionsTo(HealthState.SUSPECT);

      SegmentConnections.endOfStreamWithoutTheDataNode(c);

      // The pool clears VALID on the dead segment; the replicas read on meanwhile.
      assertTrue(waitFor(() -> !before.get(0).isValid()) >= 0, "the dead segment's slots");
      assertEquals(3, counters.replicasOrphaned(), "every replica on the segment is orphaned");
      assertTrue(
          waitFor(
                  () ->
                      m.health()
                              .of(DFS.dfs().socketPath(0))
                              .status()
                              .transitionsTo(HealthState.SUSPECT)
                          > suspected)
              >= 0,
          "a closed segment is a sign for the DataNode's health (its probe then clears it)");
      for (LocatedBlock lb : blocks(file)) {
        readBlock(m, file, lb, data); // a cache hit: an orphan is valid
      }
      long revalidated =
          waitFor(
              () -> replicas.stream().noneMatch(Replica::isOrphaned) && m.orphanedReplicas() == 0);
      assertTrue(revalidated >= 0, "re-validated: " + replicas);
      for (int i = 0; i < replicas.size(); i++) {
        Replica r = replicas.get(i);
        assertTrue(r.isValid(), "valid again: " + r);
        assertNotSame(before.get(i), r.slot(), "a new slot: " + r);
        assertTrue(r.slot().isValid(), "registered with the DataNode: " + r);
        assertNotSame(segment, r.slot().segment(), "from a live segment: " + r);
      }
      assertEquals(3, counters.replicasRevalidated());
      assertEquals(0, counters.orphansDropped());
      for (LocatedBlock lb : blocks(file)) {
        readBlock(m, file, lb, data);
      }
      assertEquals(loads, m.cacheStats().loadSuccessCount(), "no replica was opened again");
      assertTrue(
          counters.orphanedReads() >= 3, "reads while orphaned: " + counters.orphanedReads());
    }
  }

  @Test
  void aSlotTheDataNodeInvalidatedBeforeTheSegmentClosedIsNotReadOn() throws Exception {
    MiniDfs dfs = DFS.dfs();
    byte[] kept = dfs.writeRandomFile("/outlive/kept", 2 * BLOCK, 2);
    byte[] deleted = dfs.writeRandomFile("/outlive/deleted", BLOCK, 3);
    try (ReplicaManager m = manager("outlive-invalidated", true)) {
      List<Replica> keptReplicas = open(m, "/outlive/kept", kept);
      Replica gone = open(m, "/outlive/deleted", deleted).get(0);
      List<Replica> all = new ArrayList<>(keptReplicas);
      all.add(gone);
      Segment segment = oneSegment(all);
      DomainConnection c = m.endpoint(dfs.socketPath(0)).segmentConnection(segment.id());

      assertTrue(dfs.fileSystem().delete(new Path("/outlive/deleted"), false));
      assertTrue(
          waitFor(() -> !gone.slot().isValid()) >= 0, "the DataNode invalidates the deleted one");
      SegmentConnections.endOfStreamWithoutTheDataNode(c);

      assertTrue(waitFor(() -> counters.replicasOrphaned() == 2) >= 0, "the others are orphaned");
      assertFalse(gone.isOrphaned(), "an invalidated replica is not orphaned");
      assertFalse(gone.isValid(), "nor read on: " + gone);
      assertTrue(
          waitFor(() -> counters.replicasRevalidated() == 2) >= 0,
          "the two kept ones are re-validated");
      for (Replica r : keptReplicas) {
        assertTrue(r.isValid(), "kept: " + r);
      }
      assertFalse(gone.isValid(), "never read on: " + gone);
    }
  }

  /**
   * The one case the slots cannot tell apart: a replica invalidated on its own just before its
   * DataNode tore the whole segment down (its clean shutdown) is orphaned with the others; the
   * DataNode asked to vouch for it refuses it as absent, and it is dropped, while the others are
   * re-validated.
   */
  @Test
  void aSegmentTornDownWholeOrphansEveryReplicaAndReValidationDropsTheDeletedOne()
      throws Exception {
    MiniDfs dfs = DFS.dfs();
    byte[] kept = dfs.writeRandomFile("/outlive/torn-kept", 2 * BLOCK, 4);
    byte[] deleted = dfs.writeRandomFile("/outlive/torn-deleted", BLOCK, 5);
    try (ReplicaManager m = manager("outlive-torn", true)) {
      List<Replica> keptReplicas = open(m, "/outlive/torn-kept", kept);
      Replica gone = open(m, "/outlive/torn-deleted", deleted).get(0);
      List<Replica> all = new ArrayList<>(keptReplicas);
      all.add(gone);
      Segment segment = oneSegment(all);
      DomainConnection c = m.endpoint(dfs.socketPath(0)).segmentConnection(segment.id());
      assertTrue(dfs.fileSystem().delete(new Path("/outlive/torn-deleted"), false));
      assertTrue(
          waitFor(() -> !gone.slot().isValid()) >= 0, "the DataNode invalidates the deleted one");

      c.sendByte(0); // stock tears the segment down: every slot invalidated, then the close

      assertTrue(waitFor(() -> counters.replicasOrphaned() == 3) >= 0, "all three orphaned");
      assertTrue(
          waitFor(() -> counters.replicasRevalidated() + counters.orphansDropped() == 3) >= 0,
          "every orphan settled");
      assertEquals(2, counters.replicasRevalidated(), "the kept ones are re-validated");
      assertEquals(1, counters.orphansDropped(), "the deleted one is dropped");
      for (Replica r : keptReplicas) {
        assertTrue(r.isValid(), "kept: " + r);
      }
      assertFalse(gone.isValid(), "dropped: " + gone);
    }
  }

  @Test
  void theReplicaOfABlockBeingWrittenIsNeverOrphaned() throws Exception {
    String file = "/outlive/growing";
    byte[] data = new byte[BLOCK / 2 + 513];
    new java.util.Random(7).nextBytes(data);
    try (org.apache.hadoop.fs.FSDataOutputStream out =
            DFS.dfs().fileSystem().create(new Path(file), true);
        ReplicaManager m = manager("outlive-growing", true)) {
      out.write(data);
      out.hflush();
      LocatedBlock lb = blocks(file).get(0);
      ReadContext context = m.source().readContext();
      ReplicaLease lease =
          m.source()
              .lease(
                  context, lb.getBlock(), lb.getBlockToken(), DFS.dfs().socketPath(0), file, true);
      assertNotNull(lease, "a short-circuit lease of the block being written");
      Replica replica = ((LeasedReplica) lease).value();
      m.source().release(context, lease);
      assertTrue(replica.files().isGrowing(), "opened for a growing file");
      Slot slot = replica.slot();
      assertNotNull(slot, "the growing replica holds a slot");
      DomainConnection c =
          m.endpoint(DFS.dfs().socketPath(0)).segmentConnection(slot.segment().id());

      SegmentConnections.endOfStreamWithoutTheDataNode(c);

      // Without its DataNode nothing vouches for a replica being written: it goes stale at once.
      assertTrue(waitFor(() -> !replica.isValid()) >= 0, "stale: " + replica);
      assertFalse(replica.isOrphaned(), "not orphaned: " + replica);
      assertEquals(0, counters.replicasOrphaned());
    }
  }

  @Test
  void withTheKeyOffEveryReplicaOfAClosedSegmentGoesStale() throws Exception {
    String file = "/outlive/off";
    byte[] data = DFS.dfs().writeRandomFile(file, 2 * BLOCK, 6);
    try (ReplicaManager m = manager("outlive-off", false)) {
      List<Replica> replicas = open(m, file, data);
      Segment segment = oneSegment(replicas);
      DomainConnection c = m.endpoint(DFS.dfs().socketPath(0)).segmentConnection(segment.id());

      SegmentConnections.endOfStreamWithoutTheDataNode(c);

      assertTrue(waitFor(() -> replicas.stream().noneMatch(Replica::isValid)) >= 0, "stale");
      assertEquals(0, counters.replicasOrphaned());
    }
  }
}
