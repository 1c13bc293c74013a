package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.protocol.ShortCircuitProtocol;
import io.scr.core.internal.read.TailSnapshot;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.common.HdfsServerConstants.ReplicaState;
import org.apache.hadoop.hdfs.server.datanode.ChunkChecksum;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;

/**
 * Op 127 REPLICA_STATE (sub-op 5) as the client sends and reads it: the shim answers from the
 * DataNode's replica object (for one in a pipeline: its acknowledged bytes and the consistent pair
 * of bytes on disk and last checksum), and HELLO advertises it.
 */
class ReplicaStateRequestTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-5", 1073741830L, 0, 1003);

  private static ShortCircuitService serviceHolding(Replica replica) {
    FsDatasetSpi<?> dataset =
        (FsDatasetSpi<?>)
            Proxy.newProxyInstance(
                ReplicaStateRequestTest.class.getClassLoader(),
                new Class<?>[] {FsDatasetSpi.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("getReplica")) {
                    return replica;
                  }
                  throw new UnsupportedOperationException(method.getName());
                });
    ShimMetrics metrics = new ShimMetrics();
    ClientLimits limits = new ClientLimits(100, 100, 100);
    return TestServices.withoutTokens(
        () -> dataset, new SegmentRegistry(limits, metrics), limits, metrics);
  }

  private static <T extends Replica> T replica(
      Class<T> type, ReplicaState state, long acked, ChunkChecksum last, long finalLength) {
    return type.cast(
        Proxy.newProxyInstance(
            ReplicaStateRequestTest.class.getClassLoader(),
            new Class<?>[] {type},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "getGenerationStamp":
                  return BLOCK.getGenerationStamp();
                case "getState":
                  return state;
                case "getBytesAcked":
                  return acked;
                case "getLastChecksumAndDataLen":
                  return last;
                case "getVisibleLength":
                case "getBytesOnDisk":
                case "getNumBytes":
                  return finalLength;
                default:
                  throw new UnsupportedOperationException(method.getName());
              }
            }));
  }

  private static BlockOpResponseProto ask(ShortCircuitService service) throws IOException {
    byte[] frame =
        ShortCircuitProtocol.encodeReplicaState(BLOCK, new Token<BlockTokenIdentifier>());
    // frame = [00 1C][7F][varint length][body]: the service is handed the body.
    int at = 3;
    while ((frame[at] & 0x80) != 0) {
      at++;
    }
    byte[] body = Arrays.copyOfRange(frame, at + 1, frame.length);
    Reply r = service.handle(ShortCircuitService.OP_SCR_EXTENSION, body, 77);
    return BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
  }

  @Test
  void aReplicaBeingWrittenAnswersItsAckedBytesAndTheConsistentTailPair() throws IOException {
    ReplicaInPipeline rbw =
        replica(
            ReplicaInPipeline.class,
            ReplicaState.RBW,
            1500,
            new ChunkChecksum(1200, new byte[] {(byte) 0xca, (byte) 0xfe, 0x00, 0x7f}),
            0);
    BlockOpResponseProto resp = ask(serviceHolding(rbw));
    assertEquals(Status.SUCCESS, resp.getStatus());
    assertEquals("gs=1003 state=RBW visible=1500 ondisk=1200 sum=cafe007f", resp.getMessage());
    TailSnapshot tail = ShortCircuitProtocol.parseReplicaState(resp.getMessage());
    assertEquals(1003, tail.generationStamp());
    assertTrue(tail.beingWritten());
    assertEquals(1500, tail.visibleLength(), "visible runs ahead of the bytes on disk");
    assertEquals(1200, tail.dataLength());
    assertTrue(tail.hasLastChecksum());
  }

  @Test
  void aFinalizedReplicaAnswersItsLengthWithoutAChecksum() throws IOException {
    Replica finalized = replica(Replica.class, ReplicaState.FINALIZED, 0, null, 4096);
    BlockOpResponseProto resp = ask(serviceHolding(finalized));
    assertEquals("gs=1003 state=FINALIZED visible=4096 ondisk=4096 sum=-", resp.getMessage());
    TailSnapshot tail = ShortCircuitProtocol.parseReplicaState(resp.getMessage());
    assertFalse(tail.beingWritten());
    assertFalse(tail.hasLastChecksum());
  }

  @Test
  void anAbsentReplicaIsRefusedInTheDatasetsWords() throws IOException {
    BlockOpResponseProto resp = ask(serviceHolding(null));
    assertEquals(Status.ERROR, resp.getStatus());
    assertTrue(resp.getMessage().startsWith("Replica not found for"), resp.getMessage());
  }

  @Test
  void helloAdvertisesTheReplicaState() {
    assertTrue(PeerExtensions.Features.parse(ShortCircuitService.EXT_ADVERTISEMENT).replicaState());
    assertFalse(
        PeerExtensions.Features.parse("scr-shim-extensions/1 batch-fds batch-release ping")
            .replicaState(),
        "a shim of before does not offer it");
  }
}
