package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.shm.InvalidSlotException;
import io.scr.shm.Segment;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shim's segments and the slots clients registered in them, indexed by block for invalidation.
 * The shim's counterpart of the DataNode's {@code ShortCircuitRegistry}, without its global lock.
 *
 * <p>Concurrency contract:
 *
 * <ul>
 *   <li>{@code segments} and {@code byBlock} are concurrent maps. A block's slots are an immutable
 *       array, replaced (copy on write) only inside {@code byBlock.compute*} for that key, so an
 *       emptied entry is removed atomically and the scan reads a consistent array without a lock or
 *       an iterator (the scan's cost is measured by {@code InvalidationScanBenchmark}).
 *   <li>Each {@link ShimSegment}'s registrations and its open/closed state are guarded by that
 *       segment's monitor. A slot word is only written under it, and never after the segment is
 *       closed (which unmaps it: touching it then would crash the JVM).
 *   <li>A slot is registered and indexed under its segment's monitor, so a {@link #remove} of the
 *       segment racing the registration always finds, and unindexes, the slot.
 *   <li>No method holds two segment monitors, and none calls out while holding one except into
 *       {@link ClientLimits} (its own short lock) and the concurrent map.
 * </ul>
 */
final class SegmentRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentRegistry.class);
  private static final ThrottledLog TRUNCATIONS = new ThrottledLog(Ticker.SYSTEM);
  private final ConcurrentHashMap<ShmId, ShimSegment> segments = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<BlockKey, SlotRef[]> byBlock = new ConcurrentHashMap<>();
  private final ClientLimits limits;
  private final ShimMetrics metrics;

  /** Test seam: runs in {@link #register} once the segment's monitor is released. */
  volatile Runnable afterRegister;

  SegmentRegistry(ClientLimits limits, ShimMetrics metrics) {
    this.limits = limits;
    this.metrics = metrics;
  }

  /**
   * Adds a freshly mapped segment owned by client {@code pid}; returns null if its id is taken (the
   * caller picks another id). For a segment made from a sealed memfd, whose size cannot change.
   */
  ShimSegment add(Segment segment, int pid) {
    ShimSegment s = new ShimSegment(segment, pid, null);
    if (segments.putIfAbsent(segment.id(), s) != null) {
      return null;
    }
    metrics.liveSegments.increment();
    return s;
  }

  /**
   * As {@link #add(Segment, int)} for the segment mapped from {@code fd}. An unsealed fd (a deleted
   * file in the fallback directory) can be truncated by the client that receives it, after which
   * touching the mapping raises SIGBUS: the registry then keeps its own read-only descriptor of the
   * file to check its size before every write to the segment (see {@link #truncated}).
   *
   * @throws IOException if the file cannot be reopened for the size check
   */
  ShimSegment add(Segment segment, int pid, SharedMemoryFd fd) throws IOException {
    FileChannel sizeCheck = fd == null || fd.isMemfd() ? null : reopen(fd);
    ShimSegment s = new ShimSegment(segment, pid, sizeCheck);
    if (segments.putIfAbsent(segment.id(), s) != null) {
      s.closeSizeCheck();
      return null;
    }
    metrics.liveSegments.increment();
    return s;
  }

  /** A new read-only open file description of {@code fd}'s file, which may already be unlinked. */
  private static FileChannel reopen(SharedMemoryFd fd) throws IOException {
    return FileChannel.open(Paths.get("/proc/self/fd/" + fd.fd()), StandardOpenOption.READ);
  }

  /**
   * Whether {@code seg}'s file is shorter than its mapping (its client truncated it): then a write
   * to the segment would fault. Checked under the segment's monitor before each write; what stays
   * is the window between this check and the write, where the fault becomes an {@code
   * InternalError} that the request, the scan and {@link #remove} each contain.
   */
  @GuardedBy("seg")
  private static boolean truncated(ShimSegment seg) {
    if (seg.sizeCheck == null) {
      return false; // a sealed memfd: F_SEAL_SHRINK
    }
    try {
      return seg.sizeCheck.size() < seg.segment.length();
    } catch (IOException e) {
      return true; // cannot tell: do not touch it
    }
  }

  /**
   * Drops a segment found truncated: closes it without touching its slots and forgets it, as if its
   * connection had closed. Its client's later requests naming it find no such segment.
   */
  private void dropTruncated(ShimSegment seg, List<SlotRef> dropped) {
    metrics.reject(ShimMetrics.Rejection.TRUNCATED_SEGMENT);
    TRUNCATIONS.warn(
        LOG,
        "Client "
            + PeerIdentity.describe(seg.ownerPid)
            + " truncated shared memory segment "
            + seg.segment.id()
            + " (a deleted file in the fallback directory, which cannot be sealed); the segment"
            + " is dropped without touching it and the client's slots in it are forgotten");
    forget(seg, dropped);
  }

  /**
   * The segment {@code id} if client {@code pid} owns it; null otherwise (no probing by others).
   */
  ShimSegment find(ShmId id, int pid) {
    ShimSegment s = segments.get(id);
    return s != null && s.ownerPid == pid ? s : null;
  }

  /** The message stock uses when a slot names an unknown segment. */
  static String noSuchSegment(ShmId id) {
    return "there is no shared memory segment registered with shmId " + id;
  }

  /**
   * Registers slot {@code index} of {@code seg} for a replica, with stock's checks, and indexes it
   * for invalidation.
   *
   * @param replica the replica object the fds were opened from; a different object later means the
   *     replica was replaced or moved
   * @throws SlotRequestException naming the failed check, or the client's slot limit
   */
  SlotRef register(
      ShimSegment seg, int index, BlockKey key, Replica replica, long gs, boolean anchorable)
      throws SlotRequestException {
    SlotRef ref;
    requireOpen(seg);
    synchronized (seg) {
      if (seg.closed) {
        throw new SlotRequestException(noSuchSegment(seg.segment.id()));
      }
      String over = limits.addSlot(seg.ownerPid);
      if (over != null) {
        metrics.reject(ShimMetrics.Rejection.CLIENT_SLOTS);
        throw new SlotRequestException(over);
      }
      try {
        seg.segment.registerSlot(index, anchorable);
      } catch (InvalidSlotException e) {
        limits.removeSlots(seg.ownerPid, 1);
        throw new SlotRequestException(e.getMessage(), e);
      } catch (RuntimeException | Error e) {
        // An Error too (an InternalError when a truncated mapping faults): uncount the slot.
        limits.removeSlots(seg.ownerPid, 1);
        throw e;
      }
      SlotRef r = new SlotRef(seg, index, key, replica, gs);
      seg.refs.put(index, r);
      metrics.liveSlots.increment();
      // Indexed under the segment's monitor: indexed after it, a remove() of the segment in
      // between found nothing to unindex and left the entry (and the closed segment) behind.
      byBlock.compute(key, (k, refs) -> with(refs, r));
      ref = r;
    }
    Runnable hook = afterRegister;
    if (hook != null) {
      hook.run();
    }
    return ref;
  }

  /**
   * Throws unless {@code seg} is open; a segment whose file was truncated is closed (and its slots
   * dropped) first. The caller then takes the segment's monitor and checks {@code closed} again.
   */
  private void requireOpen(ShimSegment seg) throws SlotRequestException {
    List<SlotRef> dropped;
    synchronized (seg) {
      if (seg.closed) {
        throw new SlotRequestException(noSuchSegment(seg.segment.id()));
      }
      dropped = truncated(seg) ? closeLocked(seg, false) : null;
    }
    if (dropped != null) {
      dropTruncated(seg, dropped);
      throw new SlotRequestException(noSuchSegment(seg.segment.id()) + " (it was truncated)");
    }
  }

  /**
   * Releases slot {@code index} of {@code seg} (RELEASE_SHORT_CIRCUIT_FDS, or a failed receipt):
   * clears VALID and drops the registration.
   */
  void unregister(ShimSegment seg, int index) throws SlotRequestException {
    SlotRef ref;
    requireOpen(seg);
    synchronized (seg) {
      if (seg.closed) {
        throw new SlotRequestException(noSuchSegment(seg.segment.id()));
      }
      try {
        seg.segment.unregisterSlot(index);
      } catch (InvalidSlotException e) {
        throw new SlotRequestException(e.getMessage(), e);
      }
      ref = seg.refs.remove(index);
      limits.removeSlots(seg.ownerPid, 1);
      metrics.liveSlots.decrement();
    }
    if (ref != null) {
      unindex(ref);
    }
  }

  /**
   * Drops a segment whose client connection closed: clears VALID on its registered slots (only
   * those, as stock does: the others are the client's own business), forgets them, and unmaps the
   * segment. A truncated segment is dropped without touching it. Idempotent.
   */
  void remove(ShimSegment seg) {
    List<SlotRef> dropped;
    boolean wasTruncated;
    synchronized (seg) {
      if (seg.closed) {
        return;
      }
      wasTruncated = truncated(seg);
      dropped = closeLocked(seg, !wasTruncated);
    }
    if (wasTruncated) {
      dropTruncated(seg, dropped);
    } else {
      forget(seg, dropped);
    }
  }

  /**
   * Closes {@code seg} (its pages become private zero pages, so nothing can fault on it afterwards)
   * and returns the slots it had registered; clears their VALID bits first if {@code touch}.
   */
  @GuardedBy("seg")
  private List<SlotRef> closeLocked(ShimSegment seg, boolean touch) {
    seg.closed = true;
    List<SlotRef> dropped = new ArrayList<>(seg.refs.values());
    seg.refs.clear();
    try {
      if (touch) {
        for (SlotRef ref : dropped) {
          seg.segment.slot(ref.index).makeInvalid();
        }
      }
    } catch (Throwable t) {
      // An InternalError: the client truncated the file between the size check and a store. The
      // segment must still be closed and uncounted below.
      metrics.reject(ShimMetrics.Rejection.TRUNCATED_SEGMENT);
      TRUNCATIONS.warn(LOG, "Segment " + seg.segment.id() + " faulted on close: " + t);
    } finally {
      seg.segment.close();
      seg.closeSizeCheck();
    }
    return dropped;
  }

  /** The bookkeeping of a segment {@link #closeLocked} closed; called without its monitor. */
  private void forget(ShimSegment seg, List<SlotRef> dropped) {
    segments.remove(seg.segment.id(), seg);
    limits.removeSlots(seg.ownerPid, dropped.size());
    limits.removeSegment(seg.ownerPid);
    metrics.liveSlots.add(-dropped.size());
    metrics.liveSegments.decrement();
    for (SlotRef ref : dropped) {
      unindex(ref);
    }
  }

  /**
   * One invalidation scan: for every block with registered slots, looks the replica up once and
   * clears VALID on each slot whose replica is gone, was replaced or moved (a different replica
   * object), or changed generation stamp. Invalidated slots stay registered (the client still
   * releases them, as with stock) but are no longer watched. When the DataNode caches blocks, the
   * valid slots' ANCHORABLE bit is made to follow whether the block is cached (one lookup per
   * block).
   *
   * @return the number of slots invalidated
   */
  int invalidateStale(ReplicaLookup lookup) {
    int[] invalidated = {0};
    List<ShimSegment> truncatedSegments = new ArrayList<>();
    boolean caching = lookup.cachingEnabled();
    byBlock.forEach(
        (key, refs) -> {
          Replica current = lookup.find(key.bpid, key.blockId);
          int cached = UNKNOWN;
          for (SlotRef ref : refs) {
            if (current != null
                && current == ref.replica
                && current.getGenerationStamp() == ref.generationStamp) {
              if (caching) {
                if (cached == UNKNOWN) {
                  cached = lookup.isCached(key.bpid, key.blockId) ? 1 : 0;
                }
                followCache(ref, cached == 1, truncatedSegments);
              }
              continue;
            }
            if (invalidate(ref, truncatedSegments)) {
              invalidated[0]++;
            }
            unindex(ref);
          }
        });
    for (ShimSegment seg : truncatedSegments) {
      List<SlotRef> dropped;
      synchronized (seg) {
        if (seg.closed) {
          continue;
        }
        dropped = closeLocked(seg, false);
      }
      dropTruncated(seg, dropped);
    }
    metrics.invalidationScans.increment();
    metrics.slotsInvalidated.add(invalidated[0]);
    return invalidated[0];
  }

  private static final int UNKNOWN = -1;

  /**
   * Sets or clears ANCHORABLE on {@code ref}'s slot to follow the DataNode's cache, as stock's
   * {@code ShortCircuitRegistry.processBlockMlockEvent} / {@code processBlockMunlockRequest} do: a
   * client skips checksum verification only while it holds an anchor, and may take one only while
   * the slot is ANCHORABLE, so an uncached (no longer mlocked and verified) replica must not stay
   * anchorable. The DataNode's cache events ({@link #blockCached}, {@link #blockUncaching}) do this
   * at once; the scan is the backstop for a slot registered while an event ran and for a DataNode
   * whose events the shim cannot hear.
   */
  private static void followCache(
      SlotRef ref, boolean cached, List<ShimSegment> truncatedSegments) {
    ShimSegment seg = ref.segment;
    synchronized (seg) {
      if (seg.closed || seg.refs.get(ref.index) != ref) {
        return;
      }
      if (truncated(seg)) {
        truncatedSegments.add(seg);
        return;
      }
      io.scr.shm.Slot slot = seg.segment.slot(ref.index);
      if (slot.isAnchorable() != cached) {
        if (cached) {
          slot.makeAnchorable();
        } else {
          slot.makeUnanchorable();
        }
      }
    }
  }

  /**
   * The DataNode cached (mlocked and verified) block {@code key}, whose current replica is {@code
   * current}: the valid slots registered for that replica become ANCHORABLE, as stock's {@code
   * ShortCircuitRegistry.processBlockMlockEvent} makes them, before the DataNode counts the block
   * cached. Slots of another replica object or generation stamp are left to the scan, which
   * invalidates them.
   *
   * @return the number of slots made anchorable
   */
  int blockCached(BlockKey key, Replica current) {
    SlotRef[] refs = byBlock.get(key);
    if (refs == null || current == null) {
      return 0;
    }
    int marked = 0;
    for (SlotRef ref : refs) {
      if (ref.replica != current || ref.generationStamp != current.getGenerationStamp()) {
        continue;
      }
      ShimSegment seg = ref.segment;
      synchronized (seg) {
        if (seg.closed || seg.refs.get(ref.index) != ref || truncated(seg)) {
          continue; // a truncated segment is the scan's to drop
        }
        io.scr.shm.Slot slot = seg.segment.slot(ref.index);
        if (slot.isValid() && !slot.isAnchorable()) {
          slot.makeAnchorable();
          marked++;
        }
      }
    }
    return marked;
  }

  /**
   * The DataNode asks to uncache (munlock) block {@code key}: clears ANCHORABLE on every slot
   * registered for it, so no reader takes a new anchor, and answers whether none is anchored now,
   * as stock's {@code ShortCircuitRegistry.processBlockMunlockRequest}. False makes the DataNode
   * defer the munlock and ask again, so that a reader skipping verification under an anchor keeps
   * reading a verified, locked block until it releases the anchor.
   */
  boolean blockUncaching(BlockKey key) {
    SlotRef[] refs = byBlock.get(key);
    if (refs == null) {
      return true;
    }
    boolean unanchored = true;
    for (SlotRef ref : refs) {
      ShimSegment seg = ref.segment;
      synchronized (seg) {
        if (seg.closed || seg.refs.get(ref.index) != ref || truncated(seg)) {
          continue;
        }
        io.scr.shm.Slot slot = seg.segment.slot(ref.index);
        slot.makeUnanchorable();
        if (slot.isAnchored()) {
          unanchored = false;
        }
      }
    }
    return unanchored;
  }

  /** Clears VALID on {@code ref}'s slot; adds its segment to {@code truncated} if it was. */
  private static boolean invalidate(SlotRef ref, List<ShimSegment> truncatedSegments) {
    ShimSegment seg = ref.segment;
    synchronized (seg) {
      if (seg.closed || seg.refs.get(ref.index) != ref) {
        return false;
      }
      if (truncated(seg)) {
        truncatedSegments.add(seg); // dropped after the walk; the other segments are scanned on
        return false;
      }
      seg.segment.slot(ref.index).makeInvalid();
      return true;
    }
  }

  private void unindex(SlotRef ref) {
    byBlock.computeIfPresent(ref.key, (k, refs) -> without(refs, ref));
  }

  private static SlotRef[] with(SlotRef[] refs, SlotRef ref) {
    if (refs == null) {
      return new SlotRef[] {ref};
    }
    SlotRef[] out = Arrays.copyOf(refs, refs.length + 1);
    out[refs.length] = ref;
    return out;
  }

  /** {@code refs} without {@code ref}; null (the entry is removed) when nothing is left. */
  private static SlotRef[] without(SlotRef[] refs, SlotRef ref) {
    for (int i = 0; i < refs.length; i++) {
      if (refs[i] == ref) {
        if (refs.length == 1) {
          return null;
        }
        SlotRef[] out = new SlotRef[refs.length - 1];
        System.arraycopy(refs, 0, out, 0, i);
        System.arraycopy(refs, i + 1, out, i, refs.length - i - 1);
        return out;
      }
    }
    return refs;
  }

  /** The slots watched for a block (a copy), for tests and diagnostics. */
  List<SlotRef> watched(BlockKey key) {
    SlotRef[] refs = byBlock.get(key);
    return refs == null ? new ArrayList<>() : new ArrayList<>(Arrays.asList(refs));
  }

  /** Number of blocks with watched slots. */
  int watchedBlocks() {
    return byBlock.size();
  }

  /** All live segments (for shutdown). */
  List<ShimSegment> liveSegments() {
    return new ArrayList<>(segments.values());
  }

  /** A slot request the registry refuses; the message names the check that failed. */
  static final class SlotRequestException extends IOException {
    private static final long serialVersionUID = 1L;

    SlotRequestException(String message) {
      super(message);
    }

    SlotRequestException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Finds the replica the DataNode currently has for a block (null when it has none) and, when the
   * DataNode caches blocks (HDFS centralized cache, mlock), whether a block is cached.
   */
  @FunctionalInterface
  interface ReplicaLookup {
    Replica find(String bpid, long blockId);

    /**
     * Whether the DataNode can cache blocks at all ({@code dfs.datanode.max.locked.memory} > 0);
     * when not, the scan asks {@link #isCached} nothing.
     */
    default boolean cachingEnabled() {
      return false;
    }

    /** Whether the block is cached (mlocked and verified) now. */
    default boolean isCached(String bpid, long blockId) {
      return false;
    }
  }

  /** A block pool and block id: the key slots are registered under (no generation stamp). */
  static final class BlockKey {
    final String bpid;
    final long blockId;

    BlockKey(String bpid, long blockId) {
      this.bpid = Objects.requireNonNull(bpid);
      this.blockId = blockId;
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof BlockKey)) {
        return false;
      }
      BlockKey k = (BlockKey) o;
      return blockId == k.blockId && bpid.equals(k.bpid);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(blockId) * 31 + bpid.hashCode();
    }

    @Override
    public String toString() {
      return bpid + ":" + blockId;
    }
  }

  /** A registered slot: its segment, index, block and the replica it was opened from. */
  static final class SlotRef {
    final ShimSegment segment;
    final int index;
    final BlockKey key;
    final Replica replica;
    final long generationStamp;

    SlotRef(ShimSegment segment, int index, BlockKey key, Replica replica, long generationStamp) {
      this.segment = segment;
      this.index = index;
      this.key = key;
      this.replica = replica;
      this.generationStamp = generationStamp;
    }
  }

  /** A segment the shim created for one client connection. */
  static final class ShimSegment {
    final Segment segment;
    final int ownerPid;

    /** The file's own descriptor for size checks; null for a sealed memfd (cannot shrink). */
    @GuardedBy("this")
    private FileChannel sizeCheck;

    @GuardedBy("this")
    final Map<Integer, SlotRef> refs = new java.util.HashMap<>();

    @GuardedBy("this")
    boolean closed;

    ShimSegment(Segment segment, int ownerPid, FileChannel sizeCheck) {
      this.segment = segment;
      this.ownerPid = ownerPid;
      this.sizeCheck = sizeCheck;
    }

    synchronized void closeSizeCheck() {
      if (sizeCheck != null) {
        try {
          sizeCheck.close();
        } catch (IOException e) {
          LOG.debug("Could not close the size check of segment {}", segment.id(), e);
        }
        sizeCheck = null;
      }
    }

    /** Whether the shim checks this segment's size before writing to it (an unsealed file). */
    synchronized boolean sizeChecked() {
      return sizeCheck != null;
    }

    /** The registered slot at {@code index}, or null; for tests. */
    synchronized SlotRef ref(int index) {
      return refs.get(index);
    }
  }
}
