package io.scr.shm;

import java.io.IOException;
import java.util.List;

/**
 * Tells the segment's peer (the DataNode) that slots are free again (RELEASE_SHORT_CIRCUIT_FDS; the
 * wire format and batching on the wire live in scr-core). The DataNode clears VALID and unregisters
 * each slot; only then may the client reuse it, because the DataNode rejects a slot it still has
 * registered.
 *
 * <p>Threading: called by the {@link SlotPool}'s maintenance thread, which sends batches off the
 * readers' threads; and, only when the pool is otherwise empty (no free slot, releases pending), by
 * allocating callers (one that needs a slot, or a queued one helping the others), which tell the
 * pending releases of one segment themselves, in as many calls as the batch size requires, instead
 * of waiting for a background thread that may be short of CPU. So calls may run concurrently on
 * different threads; implementations must be thread-safe. Each call carries slots of <em>one</em>
 * segment, at most the pool's release batch size, and no slot is in two calls. The list is valid
 * only during the call (it is reused afterwards): copy it to keep it. On return the slots go back
 * to the pool (first to waiting callers). If it throws, the pool gives up the whole segment as
 * stock does (every slot invalidated, no more allocations from it, returned to the {@link
 * SegmentSource} once empty, which makes the DataNode drop it). It must not call back into the
 * pool, and should bound its own I/O: a caller that started telling a segment's releases before its
 * allocation wait ran out finishes them, so the releaser's timeout is what it can overrun the wait
 * by.
 */
@FunctionalInterface
public interface SlotReleaser {
  /** Releases {@code slots}, all in the same segment. */
  void release(List<SlotId> slots) throws IOException;
}
