package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.SlotRef;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.File;
import java.io.RandomAccessFile;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Client side (mode B): a reader skips checksum verification only while it can anchor its slot,
 * i.e. while the DataNode keeps the slot ANCHORABLE (stock: while the block is cached, mlocked and
 * verified); once the shim clears ANCHORABLE on uncache, the same lease verifies again. Shown with
 * a replica corrupted on disk under an open lease: anchored, the bad bytes are returned unverified,
 * as stock returns them from a cached block; unanchored, the read fails with a ChecksumException.
 * (The test sets ANCHORABLE by hand where the DataNode's cache would, and clears it through the
 * shim's scan with a dataset that reports the block uncached; {@code
 * ShimCachedReplicaZeroCopyConformanceTest} caches for real.)
 */
class AnchoredReadModeBTest {
  private static final int LEN = 64 * 1024;
  private static final int BAD_OFFSET = 4000;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(1 << 20).mode(DataNodeMode.SHIM).buildExtension();

  @Test
  void anAnchorableSlotSkipsVerificationAndAnUnanchorableOneVerifies() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/anchor", LEN, 53);
    List<LocatedBlock> blocks =
        DFS.dfs().fileSystem().getClient().getLocatedBlocks("/anchor", 0, LEN).getLocatedBlocks();
    LocatedBlock lb = blocks.get(0);
    ExtendedBlock block = lb.getBlock();
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(0);
    SegmentRegistry registry = ShimMetricsClusterTest.plugin(dn).registry();

    Configuration conf = DFS.dfs().clientConf();
    conf.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop on the client
    conf.set("scr.client.context", "anchor-mode-b");
    conf.setInt("scr.metrics.summary.interval.seconds", 0);
    Engine client = Engine.acquire(conf);
    try {
      ReplicaLease lease =
          client.lease(block, lb.getBlockToken(), DFS.dfs().socketPath(0), "/anchor", null);
      assertNotNull(lease, "a lease with a slot from the shim");
      try {
        readAnchoredThenUnanchored(lease, expect, block, registry, dn);
      } finally {
        lease.close();
      }
    } finally {
      client.close();
    }
  }

  private static void readAnchoredThenUnanchored(
      ReplicaLease lease, byte[] expect, ExtendedBlock block, SegmentRegistry registry, DataNode dn)
      throws Exception {
    assertArrayEquals(expect, read(lease), "the intact replica reads back verified");

    List<SlotRef> refs = registry.watched(new BlockKey(block.getBlockPoolId(), block.getBlockId()));
    assertEquals(1, refs.size(), "the lease's slot is registered with the shim");
    SlotRef ref = refs.get(0);
    io.scr.shm.Slot slot = ref.segment.segment.slot(ref.index);
    assertFalse(slot.isAnchorable(), "not cached: registered unanchorable, as stock");
    slot.makeAnchorable(); // what the DataNode's cache does when it has mlocked the block

    corrupt(block);
    byte[] anchored = read(lease);
    assertFalse(
        Arrays.equals(expect, anchored),
        "anchored: the read skipped verification (the bytes are the corrupt ones)");

    // The DataNode uncaches the block; the shim's scan clears ANCHORABLE.
    registry.invalidateStale(
        new SegmentRegistry.ReplicaLookup() {
          @Override
          @SuppressWarnings("deprecation")
          public Replica find(String bpid, long blockId) {
            return dn.getFSDataset().getReplica(bpid, blockId);
          }

          @Override
          public boolean cachingEnabled() {
            return true;
          }

          @Override
          public boolean isCached(String bpid, long blockId) {
            return false;
          }
        });
    assertFalse(slot.isAnchorable(), "cleared on uncache");
    assertTrue(slot.isValid(), "the replica itself is still valid");
    assertThrows(ChecksumException.class, () -> read(lease), "unanchored: the read verifies");
  }

  private static byte[] read(ReplicaLease lease) throws Exception {
    byte[] out = new byte[(int) lease.length()];
    int done = 0;
    while (done < out.length) {
      int n = lease.read(done, out, done, out.length - done, true);
      if (n <= 0) {
        break;
      }
      done += n;
    }
    return out;
  }

  private static void corrupt(ExtendedBlock block) throws Exception {
    File f = DFS.dfs().cluster().getBlockFile(0, block);
    assertNotNull(f, "DataNode 0 holds " + block);
    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
      byte[] bytes = new byte[64];
      raf.seek(BAD_OFFSET);
      raf.readFully(bytes);
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] ^= (byte) 0x5a;
      }
      raf.seek(BAD_OFFSET);
      raf.write(bytes);
    }
  }
}
