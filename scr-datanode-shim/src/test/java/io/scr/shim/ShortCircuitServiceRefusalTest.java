package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.SegmentFactory;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.ReplicaNotFoundException;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;

/**
 * What the shim tells a client whose fd request it cannot serve, where the client acts on the
 * difference: "this DataNode holds no such replica" (the client remembers it and does not ask again
 * for that block for a while) against "not ready yet" (a starting DataNode whose block pool is not
 * loaded: every replica would look absent).
 */
class ShortCircuitServiceRefusalTest {
  private static final int MAX = Integer.MAX_VALUE;

  private static ShortCircuitService service(ShortCircuitService.DatasetAccess dataset) {
    ShimMetrics metrics = new ShimMetrics();
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
    return new ShortCircuitService(
        dataset,
        null,
        new SegmentRegistry(limits, metrics),
        limits,
        SegmentFactory.newBuilder().build(),
        metrics,
        DataNodeAccounting.NONE,
        true,
        Ticker.SYSTEM);
  }

  private static byte[] fdRequest(ExtendedBlock block) {
    return OpRequestShortCircuitAccessProto.newBuilder()
        .setHeader(
            BaseHeaderProto.newBuilder()
                .setBlock(PBHelperClient.convert(block))
                .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
        .setMaxVersion(1)
        .build()
        .toByteArray();
  }

  @Test
  void aDataNodeWhoseBlockPoolIsNotLoadedSaysNotReadyNotNoSuchReplica() throws Exception {
    ShortCircuitService starting =
        service(
            new ShortCircuitService.DatasetAccess() {
              @Override
              public FsDatasetSpi<?> dataset() {
                throw new AssertionError("the dataset was asked before its block pool loaded");
              }

              @Override
              public boolean blockPoolReady(String bpid) {
                return false;
              }
            });
    Reply r =
        starting.handle(
            ShortCircuitService.OP_REQUEST_FDS,
            fdRequest(new ExtendedBlock("BP-7", 1073741825L, 0, 1001)),
            4242);
    BlockOpResponseProto resp =
        BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
    assertEquals(Status.ERROR, resp.getStatus());
    assertEquals("Not ready to serve the block pool, BP-7.", resp.getMessage(), "stock's words");
    assertFalse(
        FdGrants.isReplicaAbsent(new IOException(resp.getMessage())), "not an absent replica");
    assertFalse(r.closeAfter, "the connection stays");
  }

  @Test
  void replicaAbsenceIsRecognisedByStocksMessagesOnly() {
    assertTrue(
        FdGrants.isReplicaAbsent(
            new IOException("No data exists for block BP-1:blk_1073741825_1001")));
    assertTrue(
        FdGrants.isReplicaAbsent(new ReplicaNotFoundException(new ExtendedBlock("BP-1", 1, 0, 1))));
    assertTrue(
        FdGrants.isReplicaAbsent(
            new IOException("Replica not found for BP-1:blk_1073741825_1001")));
    assertFalse(
        FdGrants.isReplicaAbsent(
            new IOException("there is no shared memory segment registered with shmId 1")));
    assertFalse(FdGrants.isReplicaAbsent(new IOException((String) null)));
  }
}
