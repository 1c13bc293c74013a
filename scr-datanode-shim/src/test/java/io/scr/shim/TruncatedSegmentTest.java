package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistryTest.FakeReplica;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.ShmId;
import io.scr.shm.internal.NativeIo;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A segment in the fallback directory (memfd unavailable or {@code scr.shim.shm.memfd=false})
 * cannot be sealed, so the client that receives its fd can truncate it; a write to a truncated
 * mapping raises SIGBUS. The shim must neither fault nor stop serving the other clients, and
 * touches only registered slots when it drops a segment, as stock does.
 */
class TruncatedSegmentTest {
  private static final int MAX = Integer.MAX_VALUE;
  private static final int CLIENT = 1111;
  private static final int OTHER = 2222;

  private final ShimMetrics metrics = new ShimMetrics();
  private final ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);
  private final List<Reply> replies = new ArrayList<>();
  private ShortCircuitService service;

  @BeforeEach
  void fallbackSegments() {
    assumeTrue(
        Files.isDirectory(SegmentFactory.DEFAULT_FALLBACK_DIRECTORY)
            && Files.isWritable(SegmentFactory.DEFAULT_FALLBACK_DIRECTORY),
        "needs a writable /dev/shm for fallback segments");
    service =
        new ShortCircuitService(
            () -> null,
            null,
            registry,
            limits,
            SegmentFactory.newBuilder().useMemfd(false).build(),
            metrics,
            DataNodeAccounting.NONE,
            true,
            Ticker.SYSTEM);
  }

  @AfterEach
  void closeClientCopies() {
    for (Reply r : replies) {
      r.closeOwnCopies();
    }
  }

  /** Op 89 through the service, as a client gets a segment; the reply keeps the client's fd. */
  private Reply requestShm(int pid) {
    Reply r =
        service.handle(
            ShortCircuitService.OP_REQUEST_SHM,
            ShortCircuitShmRequestProto.newBuilder().setClientName("c").build().toByteArray(),
            pid);
    replies.add(r);
    assertNotNull(r.segment(), "a segment was created");
    assertNotNull(r.shmFd);
    assertFalse(r.shmFd.isMemfd(), "a fallback segment");
    return r;
  }

  private void registerSlot(ShimSegment seg, int index, long blockId) throws Exception {
    seg.segment.slot(index).makeValid(); // the client's part before op 87
    registry.register(
        seg, index, new BlockKey("bp", blockId), new FakeReplica(blockId, 1), 1, false);
  }

  @Test
  void aTruncatedSegmentIsDroppedWithoutFaultingAndOtherClientsKeepTheirInvalidation()
      throws Exception {
    Reply truncating = requestShm(CLIENT);
    Reply other = requestShm(OTHER);
    ShimSegment bad = truncating.segment();
    ShimSegment good = other.segment();
    assertTrue(bad.sizeChecked(), "an unsealed segment is size-checked");
    registerSlot(bad, 0, 1);
    registerSlot(good, 0, 2);

    NativeIo.ftruncate(truncating.shmFd.fd(), 0); // what the client can do with its copy

    // A registration on the truncated segment is refused, not a SIGBUS.
    SegmentRegistry.SlotRequestException refused =
        assertThrows(
            SegmentRegistry.SlotRequestException.class,
            () ->
                registry.register(bad, 1, new BlockKey("bp", 3), new FakeReplica(3, 1), 1, false));
    assertTrue(refused.getMessage().contains("truncated"), refused.getMessage());
    assertNull(registry.find(bad.segment.id(), CLIENT), "the truncated segment is forgotten");

    // Every replica deleted: the scan must run through and still reach the other client.
    assertEquals(1, registry.invalidateStale((bp, id) -> null));
    assertFalse(good.segment.slot(0).isValid(), "the other client's slot was invalidated");

    // The truncating client's connection closes: nothing faults, nothing stays counted for it.
    registry.remove(bad);
    registry.remove(good);
    assertEquals(0, metrics.snapshot().get("live.segments"));
    assertEquals(0, metrics.snapshot().get("live.slots"));
    assertEquals(0, limits.clientCount());
    assertTrue(metrics.rejections(ShimMetrics.Rejection.TRUNCATED_SEGMENT) >= 1, "counted");
  }

  @Test
  void closingAConnectionWhoseSegmentWasTruncatedDoesNotFault() throws Exception {
    Reply r = requestShm(CLIENT);
    ShimSegment seg = r.segment();
    registerSlot(seg, 5, 1);
    NativeIo.ftruncate(r.shmFd.fd(), 0);
    registry.remove(seg); // the connection's close: used to write all 128 slots (SIGBUS)
    assertTrue(seg.segment.isClosed());
    assertNull(registry.find(seg.segment.id(), CLIENT));
    assertEquals(0, metrics.snapshot().get("live.segments"));
    assertEquals(0, metrics.snapshot().get("live.slots"));
    assertEquals(0, limits.clientCount());
    assertEquals(0, registry.watchedBlocks());
  }

  @Test
  void aScanMeetingATruncatedSegmentDropsItAndFinishes() throws Exception {
    Reply r = requestShm(CLIENT);
    Reply other = requestShm(OTHER);
    registerSlot(r.segment(), 0, 1);
    registerSlot(other.segment(), 0, 1); // the same block, so one lookup reaches both
    NativeIo.ftruncate(r.shmFd.fd(), 0);
    assertEquals(1, registry.invalidateStale((bp, id) -> null));
    assertFalse(other.segment().segment.slot(0).isValid());
    assertNull(registry.find(r.segment().segment.id(), CLIENT), "dropped by the scan");
    assertEquals(1, metrics.snapshot().get("live.segments"));
    registry.remove(other.segment());
    registry.remove(r.segment());
    assertEquals(0, limits.clientCount());
  }

  @Test
  void droppingASegmentTouchesOnlyItsRegisteredSlots() throws Exception {
    Reply r = requestShm(CLIENT);
    ShimSegment seg = r.segment();
    try (Segment clientView = Segment.map(ShmId.random(), r.shmFd.fd(), r.shmFd.length())) {
      registerSlot(seg, 0, 1);
      clientView.slot(7).makeValid(); // allocated by the client, never registered
      registry.remove(seg);
      assertFalse(clientView.slot(0).isValid(), "a registered slot is invalidated");
      assertTrue(clientView.slot(7).isValid(), "an unregistered slot is left alone, as stock");
    }
  }
}
