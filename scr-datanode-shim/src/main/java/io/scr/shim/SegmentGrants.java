package io.scr.shim;

import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.ShimMetrics.OpKind;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import io.scr.shm.ShmSupport;
import java.io.IOException;
import java.security.SecureRandom;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves segment requests (REQUEST_SHORT_CIRCUIT_SHM, op 89): creates a stock-sized segment (a
 * sealed memfd, or a deleted file in the fallback directory), maps it, registers it for the client
 * within its segment limit, and answers with its id and fd; the connection then carries the
 * segment. Statuses as a stock DataNode's.
 *
 * <p>Thread-safe: holds no mutable state of its own (the registry, limits and factory are
 * thread-safe; {@link SecureRandom} is).
 */
final class SegmentGrants {
  static final int SHM_LENGTH = SegmentFactory.STOCK_SEGMENT_LENGTH;
  private static final Logger LOG = LoggerFactory.getLogger(SegmentGrants.class);
  private static final SecureRandom SHM_IDS = new SecureRandom();

  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final SegmentFactory segmentFactory;
  private final ShimMetrics metrics;
  private final DataNodeAccounting accounting;

  SegmentGrants(
      SegmentRegistry registry,
      ClientLimits limits,
      SegmentFactory segmentFactory,
      ShimMetrics metrics,
      DataNodeAccounting accounting) {
    this.registry = registry;
    this.limits = limits;
    this.segmentFactory = segmentFactory;
    this.metrics = metrics;
    this.accounting = accounting;
  }

  /** Whether segments are memfds (memory only, so an event loop may create them). */
  boolean inMemory() {
    return segmentFactory.usesMemfd();
  }

  Reply requestShm(ShortCircuitShmRequestProto req, int pid, long start, long decoded) {
    Reply.Builder r = createShm(req, pid, start).decodedAt(decoded);
    if (!r.hasOnDone()) {
      // Refused before a segment existed: stock's "shmId: n/a, success: false" line.
      String client = req.getClientName();
      r.onDone(ok -> accounting.shmRequestDone(client, null, false));
    }
    return r.build();
  }

  private Reply.Builder createShm(ShortCircuitShmRequestProto req, int pid, long start) {
    if (!ShmSupport.isAvailable()) {
      return shmError(
          Status.ERROR_UNSUPPORTED,
          "This datanode has not been configured to support short-circuit shared memory"
              + " segments.",
          start);
    }
    String over = limits.addSegment(pid);
    if (over != null) {
      // ERROR_UNSUPPORTED, not ERROR: a stock client re-asks at once on ERROR, in a loop, while
      // ERROR_UNSUPPORTED makes it read without slots (time-based staleness) from now on.
      metrics.reject(ShimMetrics.Rejection.CLIENT_SEGMENTS);
      return shmError(Status.ERROR_UNSUPPORTED, over, start);
    }
    SharedMemoryFd fd = null;
    Segment segment = null;
    ShimSegment added = null;
    boolean counted = true;
    try {
      fd = segmentFactory.createFd(SHM_LENGTH);
      ShimSegment seg = null;
      while (seg == null) {
        if (segment != null) {
          segment.close();
        }
        segment = Segment.map(newShmId(), fd.fd(), SHM_LENGTH);
        seg = registry.add(segment, pid, fd);
      }
      segment = null;
      added = seg;
      ShmId id = seg.segment.id();
      LOG.debug("Created segment {} for client {} (pid {})", id, req.getClientName(), pid);
      String client = req.getClientName();
      long[] shm = {id.hi(), id.lo()};
      Reply.Builder r =
          Replies.of(
                  OpKind.REQUEST_SHM,
                  Status.SUCCESS,
                  ShortCircuitShmResponseProto.newBuilder()
                      .setStatus(Status.SUCCESS)
                      .setId(ShortCircuitShmIdProto.newBuilder().setHi(id.hi()).setLo(id.lo()))
                      .build(),
                  start)
              .passSegment(fd, seg)
              .onDone(ok -> accounting.shmRequestDone(client, ok ? shm : null, ok));
      fd = null;
      added = null;
      counted = false;
      return r;
    } catch (IOException e) {
      LOG.warn("Failed to create a shared memory segment for pid {}", pid, e);
      return shmError(
          Status.ERROR, "Failed to create shared file descriptor: " + e.getMessage(), start);
    } finally {
      // Also on an Error: the segment and its count must not outlive a request that failed.
      if (added != null) {
        registry.remove(added);
        counted = false; // removing a registered segment uncounts it
      }
      if (counted) {
        limits.removeSegment(pid);
      }
      if (fd != null) {
        fd.close();
      }
      if (segment != null) {
        segment.close();
      }
    }
  }

  /**
   * A segment id no client can predict. An id names the segment in RELEASE_SHORT_CIRCUIT_FDS and
   * slot registrations; ids from {@code ThreadLocalRandom} (an invertible mix of a counter) let a
   * client that saw one id compute the next ones handed out on that worker thread. One {@code
   * SecureRandom} call (a few microseconds) per segment is noise beside creating and mapping it.
   */
  static ShmId newShmId() {
    return ShmId.of(SHM_IDS.nextLong(), SHM_IDS.nextLong());
  }

  static Reply.Builder shmError(Status status, String message, long start) {
    return Replies.of(
        OpKind.REQUEST_SHM,
        status,
        ShortCircuitShmResponseProto.newBuilder().setStatus(status).setError(message).build(),
        start);
  }
}
