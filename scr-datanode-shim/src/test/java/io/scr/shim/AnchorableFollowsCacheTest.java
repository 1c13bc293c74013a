package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistryTest.FakeReplica;
import io.scr.shm.Slot;
import java.util.HashSet;
import java.util.Set;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.junit.jupiter.api.Test;

/**
 * A client skips checksum verification only under an anchor, which it can take only while the
 * DataNode keeps the slot ANCHORABLE, i.e. while the block is cached (mlocked and verified). Stock
 * clears ANCHORABLE when the block is uncached ({@code
 * ShortCircuitRegistry.processBlockMunlockRequest}) and sets it when it is cached ({@code
 * processBlockMlockEvent}); the shim's scan must do the same.
 */
class AnchorableFollowsCacheTest {
  private final SegmentRegistry registry =
      new SegmentRegistry(new ClientLimits(10, 10, 10), new ShimMetrics());

  /** The dataset: one replica per block, and a block cache the test fills and empties. */
  private static final class Dataset implements SegmentRegistry.ReplicaLookup {
    final FakeReplica replica = new FakeReplica(1, 7);
    final Set<Long> cached = new HashSet<>();

    @Override
    public Replica find(String bpid, long blockId) {
      return blockId == 1 ? replica : null;
    }

    @Override
    public boolean cachingEnabled() {
      return true;
    }

    @Override
    public boolean isCached(String bpid, long blockId) {
      return cached.contains(blockId);
    }
  }

  @Test
  void uncachingABlockClearsAnchorableSoNewReadsVerifyAndCachingSetsItAgain() throws Exception {
    Dataset ds = new Dataset();
    ds.cached.add(1L);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    Slot slot = seg.segment.slot(0);
    slot.makeValid(); // the client's part
    registry.register(seg, 0, new BlockKey("bp", 1), ds.replica, 7, true); // cached at op 87

    // Cached: a reader may anchor and skip verification, as with stock.
    assertTrue(slot.tryAnchor(), "anchorable while cached");
    slot.releaseAnchor();

    ds.cached.remove(1L); // the DataNode uncaches (munlocks) the block
    assertEquals(0, registry.invalidateStale(ds), "uncaching invalidates nothing");
    assertTrue(slot.isValid(), "the replica is still good");
    assertFalse(slot.isAnchorable(), "ANCHORABLE cleared on uncache");
    assertFalse(slot.tryAnchor(), "a new read cannot anchor, so it verifies checksums");

    ds.cached.add(1L); // cached again
    registry.invalidateStale(ds);
    assertTrue(slot.isAnchorable(), "ANCHORABLE set again once cached, as processBlockMlockEvent");
    assertTrue(slot.tryAnchor());
    slot.releaseAnchor();
    registry.remove(seg);
  }

  @Test
  void aHeldAnchorSurvivesTheUncacheButNoNewOneIsGranted() throws Exception {
    Dataset ds = new Dataset();
    ds.cached.add(1L);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    Slot slot = seg.segment.slot(3);
    slot.makeValid();
    registry.register(seg, 3, new BlockKey("bp", 1), ds.replica, 7, true);
    assertTrue(slot.tryAnchor()); // a read in progress, skipping verification

    ds.cached.clear();
    registry.invalidateStale(ds);
    assertTrue(slot.isAnchored(), "the read in progress keeps its anchor (stock: munlock waits)");
    assertFalse(slot.isAnchorable());
    assertFalse(slot.tryAnchor(), "the next read verifies");
    slot.releaseAnchor();
    registry.remove(seg);
  }

  @Test
  void withoutABlockCacheTheScanDoesNotAskForOne() throws Exception {
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    FakeReplica replica = new FakeReplica(1, 7);
    seg.segment.slot(0).makeValid();
    registry.register(seg, 0, new BlockKey("bp", 1), replica, 7, false);
    SegmentRegistry.ReplicaLookup noCache =
        new SegmentRegistry.ReplicaLookup() {
          @Override
          public Replica find(String bpid, long blockId) {
            return replica;
          }

          @Override
          public boolean isCached(String bpid, long blockId) {
            throw new AssertionError("asked for the cache of a DataNode that caches nothing");
          }
        };
    assertEquals(0, registry.invalidateStale(noCache));
    assertFalse(seg.segment.slot(0).isAnchorable());
    registry.remove(seg);
  }

  @Test
  void theCacheEventMarksSlotsGrantedBeforeAndAnUncacheWaitsForHeldAnchors() throws Exception {
    Dataset ds = new Dataset();
    BlockKey key = new BlockKey("bp", 1);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), 1000);
    Slot slot = seg.segment.slot(2);
    slot.makeValid();
    registry.register(seg, 2, key, ds.replica, 7, false); // granted before the block was cached
    Slot stale = seg.segment.slot(5);
    stale.makeValid();
    registry.register(seg, 5, key, new FakeReplica(1, 6), 6, false); // an older replica's slot

    assertEquals(1, registry.blockCached(key, ds.replica), "the DataNode cached the block");
    assertTrue(slot.isAnchorable(), "anchorable at the cache event, without a scan");
    assertFalse(stale.isAnchorable(), "another replica's slot is the scan's to invalidate");

    assertTrue(slot.tryAnchor()); // a read skipping verification
    assertFalse(registry.blockUncaching(key), "held anchor: the DataNode must defer the munlock");
    assertFalse(slot.isAnchorable(), "no new anchor while the uncache waits");
    assertFalse(slot.tryAnchor());
    slot.releaseAnchor();
    assertTrue(registry.blockUncaching(key), "no anchor held: the munlock may proceed");
    registry.remove(seg);
  }
}
