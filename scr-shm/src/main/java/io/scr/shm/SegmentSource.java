package io.scr.shm;

import java.io.IOException;

/**
 * Where a {@link SlotPool} gets its segments. The client's implementation (in scr-core) asks the
 * DataNode for one over a dedicated UNIX socket (REQUEST_SHORT_CIRCUIT_SHM); tests use local memfd
 * segments from {@link SegmentFactory}.
 *
 * <p>Threading: {@link #fetch()} is called only from the pool's refill thread, one call at a time,
 * so it may block on I/O (bounded by the source's own timeouts); it never runs on a thread that
 * allocates slots. {@link #returnSegment} is called from the pool's maintenance thread (surplus,
 * dead segments once empty); from the refill thread, for a segment it just fetched and the pool
 * refused (reported disconnected during the fetch, handed out twice, or the pool closed meanwhile);
 * and, after {@link SlotPool#close()}, from the thread that closes the pool or releases the last
 * slot of the segment. So it may run on two threads at once (for different segments) and must be
 * thread-safe. Neither method may call back into the pool except {@link
 * SlotPool#segmentDisconnected}.
 *
 * <p>Ownership: {@code fetch} hands a mapped segment, with no slot in use, to the pool. {@code
 * returnSegment} hands it back exactly once, when no slot of it is in use and none will be again:
 * the source must then release the peer's side (client: close the segment's socket, so the DataNode
 * drops the segment) and {@link Segment#close() close} the segment (or reuse it).
 */
public interface SegmentSource {
  /**
   * A new segment for the pool. Throwing counts as a fetch failure; the pool backs off and retries.
   * A source that is shutting down throws {@link SlotPoolClosedException} instead: the pool stops
   * fetching, quietly.
   */
  Segment fetch() throws IOException;

  /** Takes back a segment the pool no longer uses (surplus, disconnected, failed, pool closed). */
  void returnSegment(Segment segment);
}
