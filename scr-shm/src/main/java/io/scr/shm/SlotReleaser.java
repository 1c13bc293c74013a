package io.scr.shm;

import java.io.IOException;
import java.util.List;

/**
 * Tells the segment's peer (the DataNode) that slots are free again (RELEASE_SHORT_CIRCUIT_FDS; the
 * wire format and batching on the wire live in scr-core). The DataNode clears VALID and unregisters
 * each slot; only then may the client reuse it, because the DataNode rejects a slot it still has
 * registered.
 *
 * <p>Threading: called only from the {@link SlotPool}'s maintenance thread, one call at a time,
 * never on a reader's thread; each call carries slots of <em>one</em> segment, at most the pool's
 * release batch size. On return the slots go back to the pool's free bitmap. If it throws, the pool
 * gives up the whole segment as stock does (every slot invalidated, no more allocations from it,
 * returned to the {@link SegmentSource} once empty, which makes the DataNode drop it).
 */
@FunctionalInterface
public interface SlotReleaser {
  /** Releases {@code slots}, all in the same segment. */
  void release(List<SlotId> slots) throws IOException;
}
