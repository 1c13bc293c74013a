package io.scr.shim;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hdfs.server.datanode.FinalizedReplica;
import org.apache.hadoop.hdfs.server.datanode.Replica;

/**
 * A benchmark and test fixture for the shim's invalidation scan: the real {@link SegmentRegistry}
 * with a given number of registered slots (in stock-sized 128-slot segments), scanned against a
 * dataset stub (a map of {@link FinalizedReplica}s by block id, the DataNode's replica map's
 * stand-in). Test code of the shim, published in its test-jar for the benchmarks module; not part
 * of the plugin.
 *
 * <p>Owns the segments it maps; {@link #close()} unmaps them. Not thread-safe: one benchmark thread
 * drives it.
 */
public final class InvalidationScanFixture implements AutoCloseable {
  private static final String BPID = "BP-bench";
  private static final int CLIENT_PID = 1;

  private final ShimMetrics metrics = new ShimMetrics();
  private final SegmentRegistry registry;
  private final Map<Long, Replica> replicas = new HashMap<>();
  private final List<ShimSegment> segments = new ArrayList<>();
  private final int slots;

  /**
   * A registry with {@code slots} registered slots, {@code slotsPerBlock} per block (block ids 0,
   * 1, ...), every replica present and unchanged, so a scan invalidates nothing until the stub is
   * changed.
   */
  public static InvalidationScanFixture create(int slots, int slotsPerBlock) throws IOException {
    return new InvalidationScanFixture(slots, slotsPerBlock);
  }

  private InvalidationScanFixture(int slots, int slotsPerBlock) throws IOException {
    if (slots < 1 || slotsPerBlock < 1) {
      throw new IllegalArgumentException("slots and slotsPerBlock must be positive");
    }
    this.slots = slots;
    registry =
        new SegmentRegistry(
            new ClientLimits(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE), metrics);
    SegmentFactory factory = SegmentFactory.newBuilder().namePrefix("scr-shim-bench").build();
    int length = ShortCircuitService.SHM_LENGTH;
    boolean ok = false;
    try {
      ShimSegment seg = null;
      int index = 0;
      for (int i = 0; i < slots; i++) {
        if (seg == null || index == seg.segment.slotCount()) {
          seg = newSegment(factory, length);
          index = 0;
        }
        long blockId = i / slotsPerBlock;
        Replica replica =
            replicas.computeIfAbsent(
                blockId, id -> new FinalizedReplica(id, 4096, 1001, null, null));
        seg.segment.slot(index).makeValid(); // the client's part before op 87
        registry.register(seg, index, new BlockKey(BPID, blockId), replica, 1001, false);
        index++;
      }
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
  }

  private ShimSegment newSegment(SegmentFactory factory, int length) throws IOException {
    try (SharedMemoryFd fd = factory.createFd(length)) {
      Segment segment = Segment.map(ShmId.random(), fd.fd(), length);
      ShimSegment s = registry.add(segment, CLIENT_PID);
      if (s == null) {
        segment.close();
        throw new IOException("segment id collision"); // 2^-128: not worth a retry loop
      }
      segments.add(s);
      return s;
    }
  }

  /** One invalidation scan over every watched block; returns the slots it invalidated. */
  public int scan() {
    return registry.invalidateStale((bpid, blockId) -> replicas.get(blockId));
  }

  /** Slots registered at creation. */
  public int slots() {
    return slots;
  }

  /** Blocks the scan still watches (invalidated slots are no longer watched). */
  public int watchedBlocks() {
    return registry.watchedBlocks();
  }

  /** Registered slots whose VALID bit is still set. */
  public int validSlots() {
    int n = 0;
    for (ShimSegment s : segments) {
      for (int i = 0; i < s.segment.slotCount(); i++) {
        if (s.ref(i) != null && s.segment.slot(i).isValid()) {
          n++;
        }
      }
    }
    return n;
  }

  /** Gives block {@code blockId} a new replica object in the stub, as a move or finalize does. */
  public void replaceReplica(long blockId) {
    Replica old = replicas.get(blockId);
    if (old != null) {
      replicas.put(
          blockId,
          new FinalizedReplica(blockId, old.getNumBytes(), old.getGenerationStamp(), null, null));
    }
  }

  /** Removes block {@code blockId} from the stub, as a deletion does. */
  public void removeReplica(long blockId) {
    replicas.remove(blockId);
  }

  /** Unmaps every segment. Idempotent. */
  @Override
  public void close() {
    for (ShimSegment s : segments) {
      registry.remove(s);
    }
    segments.clear();
  }
}
