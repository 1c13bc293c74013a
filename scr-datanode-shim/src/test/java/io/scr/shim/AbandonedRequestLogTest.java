package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shm.ShmId;
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.test.GenericTestUtils.LogCapturer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A client that gave up on an fd request (it timed out and freed its slot, clearing VALID, before
 * the shim registered the slot) is not a DataNode error: the shim answers ERROR as stock does, and
 * logs one INFO line without a stack trace, where stock logs an ERROR with one per request.
 */
class AbandonedRequestLogTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-7", 1073741825L, 4, 1001);
  private static final int PID = 100;

  @TempDir Path dir;

  @Test
  void aSlotTheClientAlreadyFreedIsOneInfoLineNotAnErrorWithATrace() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    ClientLimits limits = new ClientLimits(10, 10, 1000);
    SegmentRegistry registry = new SegmentRegistry(limits, metrics);
    ShimSegment seg = registry.add(SegmentRegistryTest.newSegment(), PID);
    ShmId id = seg.segment.id();
    Path data = Files.write(dir.resolve("blk"), new byte[] {1, 2, 3, 4});
    Path meta = Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0});
    ShortCircuitService svc =
        TestServices.withoutTokens(
            () -> FakeDataset.of(BLOCK, data, meta), registry, limits, metrics);
    byte[] request =
        OpRequestShortCircuitAccessProto.newBuilder()
            .setHeader(
                BaseHeaderProto.newBuilder()
                    .setBlock(PBHelperClient.convert(BLOCK))
                    .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
            .setMaxVersion(1)
            .setSlotId(
                ShortCircuitShmSlotProto.newBuilder()
                    .setShmId(ShortCircuitShmIdProto.newBuilder().setHi(id.hi()).setLo(id.lo()))
                    .setSlotIdx(5)) // never made valid: the client freed it when it gave up
            .build()
            .toByteArray();

    LogCapturer log = LogCapturer.captureLogs(LoggerFactory.getLogger(FdGrants.class));
    Reply r;
    try {
      r = svc.handle(ShortCircuitService.OP_REQUEST_FDS, request, PID);
    } finally {
      log.stopCapturing();
    }
    try {
      BlockOpResponseProto resp =
          BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
      assertEquals(Status.ERROR, resp.getStatus(), "stock's status");
      assertTrue(resp.getMessage().contains("is not marked as valid"), resp.getMessage());
      assertTrue(r.streams.isEmpty(), "no fds");

      String out = log.getOutput();
      assertTrue(out.contains("is not marked as valid"), "logged: " + out);
      assertEquals(1, out.trim().split("\n").length, "one line: " + out);
      assertFalse(out.contains("ERROR"), "not at ERROR: " + out);
      assertFalse(out.contains("\tat "), "no stack trace: " + out);
    } finally {
      r.closeOwnCopies();
      registry.remove(seg);
    }
  }
}
