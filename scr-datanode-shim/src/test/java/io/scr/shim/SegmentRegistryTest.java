package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.hdfs.server.common.HdfsServerConstants.ReplicaState;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi;
import org.junit.jupiter.api.Test;

class SegmentRegistryTest {
  static final int OWNER = 1000;

  static Segment newSegment() throws Exception {
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(8192)) {
      return Segment.map(ShmId.random(), fd.fd(), 8192);
    }
  }

  /** A replica in the replica map: identity and generation stamp are what the scan compares. */
  static final class FakeReplica implements Replica {
    final long id;
    volatile long gs;

    FakeReplica(long id, long gs) {
      this.id = id;
      this.gs = gs;
    }

    @Override
    public long getBlockId() {
      return id;
    }

    @Override
    public long getGenerationStamp() {
      return gs;
    }

    @Override
    public ReplicaState getState() {
      return ReplicaState.FINALIZED;
    }

    @Override
    public long getNumBytes() {
      return 0;
    }

    @Override
    public long getBytesOnDisk() {
      return 0;
    }

    @Override
    public long getVisibleLength() {
      return 0;
    }

    @Override
    public String getStorageUuid() {
      return "s";
    }

    @Override
    public boolean isOnTransientStorage() {
      return false;
    }

    // No @Override: Replica gained getVolume() in Hadoop 3.4; without the annotation this test
    // compiles against 3.3.6 too (-Phadoop-3.3).
    public FsVolumeSpi getVolume() {
      return null;
    }
  }

  @Test
  void segmentsAreVisibleOnlyToTheirOwner() throws Exception {
    SegmentRegistry registry = new SegmentRegistry(new ClientLimits(10, 10, 10), new ShimMetrics());
    ShimSegment seg = registry.add(newSegment(), OWNER);
    assertNotNull(registry.find(seg.segment.id(), OWNER));
    assertNull(registry.find(seg.segment.id(), OWNER + 1));
    registry.remove(seg);
    assertNull(registry.find(seg.segment.id(), OWNER));
    assertTrue(seg.segment.isClosed());
  }

  @Test
  void scanInvalidatesDeletedReplacedAndRestampedReplicasOnly() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    SegmentRegistry registry = new SegmentRegistry(new ClientLimits(10, 10, 100), metrics);
    ShimSegment seg = registry.add(newSegment(), OWNER);
    Map<Long, FakeReplica> replicaMap = new HashMap<>();
    for (int i = 0; i < 4; i++) {
      replicaMap.put((long) i, new FakeReplica(i, 7));
      seg.segment.slot(i).makeValid(); // the client's part
      registry.register(seg, i, new BlockKey("bp", i), replicaMap.get((long) i), 7, false);
    }
    assertEquals(0, registry.invalidateStale((bp, id) -> replicaMap.get(id)));

    replicaMap.remove(0L); // deleted
    replicaMap.put(1L, new FakeReplica(1, 7)); // moved: a new replica object
    replicaMap.get(2L).gs = 8; // re-stamped (append, recovery)
    assertEquals(3, registry.invalidateStale((bp, id) -> replicaMap.get(id)));

    assertFalse(seg.segment.slot(0).isValid());
    assertFalse(seg.segment.slot(1).isValid());
    assertFalse(seg.segment.slot(2).isValid());
    assertTrue(seg.segment.slot(3).isValid());
    assertEquals(1, registry.watchedBlocks());
    assertEquals(3, metrics.snapshot().get("slots_invalidated"));
    // Invalidated slots stay registered until the client releases them, as with stock.
    registry.unregister(seg, 0);
    registry.remove(seg);
    assertEquals(0, registry.watchedBlocks());
    assertEquals(0, metrics.snapshot().get("live.slots"));
  }

  @Test
  void slotRulesAndLimitsAreEnforced() throws Exception {
    ClientLimits limits = new ClientLimits(10, 1, 2);
    SegmentRegistry registry = new SegmentRegistry(limits, new ShimMetrics());
    ShimSegment seg = registry.add(newSegment(), OWNER);
    FakeReplica r = new FakeReplica(1, 1);
    BlockKey key = new BlockKey("bp", 1);
    SegmentRegistry.SlotRequestException notValid =
        assertThrows(
            SegmentRegistry.SlotRequestException.class,
            () -> registry.register(seg, 0, key, r, 1, false));
    assertTrue(notValid.getMessage().contains("not marked as valid"), notValid.getMessage());
    for (int i = 0; i < 3; i++) {
      seg.segment.slot(i).makeValid();
    }
    registry.register(seg, 0, key, r, 1, true);
    assertTrue(seg.segment.slot(0).isAnchorable());
    assertThrows(
        SegmentRegistry.SlotRequestException.class,
        () -> registry.register(seg, 0, key, r, 1, false),
        "in use");
    assertThrows(
        SegmentRegistry.SlotRequestException.class,
        () -> registry.register(seg, 128, key, r, 1, false),
        "out of range");
    registry.register(seg, 1, key, r, 1, false);
    SegmentRegistry.SlotRequestException over =
        assertThrows(
            SegmentRegistry.SlotRequestException.class,
            () -> registry.register(seg, 2, key, r, 1, false));
    assertTrue(over.getMessage().contains(ScrShimKeys.CLIENT_MAX_SLOTS.name()), over.getMessage());
    assertNotNull(limits.addSegment(OWNER + 1) == null ? "ok" : null);
    String segOver = limits.addSegment(OWNER + 1);
    assertNotNull(segOver);
    assertTrue(segOver.contains(ScrShimKeys.CLIENT_MAX_SEGMENTS.name()));
    registry.remove(seg);
  }
}
