package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.scr.shm.SegmentFactory;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.EnumSet;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockPoolTokenSecretManager;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenSecretManager;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;

/**
 * An {@code Error} while serving a request (an OutOfMemoryError, an InternalError from a faulting
 * mapping, a LinkageError) ends that request, never the connection's ability to make progress, and
 * a forged block token cannot make the DataNode allocate what its length prefixes claim.
 */
class ShimErrorContainmentTest {
  private static final int MAX = Integer.MAX_VALUE;
  private static final String BPID = "BP-7";
  private static final ExtendedBlock BLOCK = new ExtendedBlock(BPID, 1073741825L, 0, 1001);

  private static ShortCircuitService service(
      ShortCircuitService.DatasetAccess dataset, BlockPoolTokenSecretManager tokens) {
    return service(dataset, tokens, new ShimMetrics());
  }

  private static ShortCircuitService service(
      ShortCircuitService.DatasetAccess dataset,
      BlockPoolTokenSecretManager tokens,
      ShimMetrics metrics) {
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
    return new ShortCircuitService(
        dataset,
        tokens,
        new SegmentRegistry(limits, metrics),
        limits,
        SegmentFactory.newBuilder().build(),
        metrics,
        DataNodeAccounting.NONE,
        true,
        Ticker.SYSTEM);
  }

  /** A dataset whose every use fails with {@code error}, as a faulting mapping would. */
  private static ShortCircuitService.DatasetAccess failingWith(Error error) {
    return new ShortCircuitService.DatasetAccess() {
      @Override
      public FsDatasetSpi<?> dataset() {
        throw error;
      }
    };
  }

  private static byte[] fdRequest(Token<BlockTokenIdentifier> token) {
    return OpRequestShortCircuitAccessProto.newBuilder()
        .setHeader(
            BaseHeaderProto.newBuilder()
                .setBlock(PBHelperClient.convert(BLOCK))
                .setToken(PBHelperClient.convert(token)))
        .setMaxVersion(1)
        .build()
        .toByteArray();
  }

  private static ByteBuf frame(int op, byte[] body) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(out);
    d.writeShort(RequestFrames.DATA_TRANSFER_VERSION);
    d.writeByte(op);
    int n = body.length;
    while (n >= 0x80) {
      d.writeByte((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    d.writeByte(n);
    d.write(body);
    return Unpooled.wrappedBuffer(out.toByteArray());
  }

  /** The DataNode's token manager for {@link #BPID}, as a DataNode (not a NameNode) holds it. */
  private static BlockPoolTokenSecretManager dataNodeTokens() {
    BlockPoolTokenSecretManager tokens = new BlockPoolTokenSecretManager();
    tokens.addBlockPool(BPID, new BlockTokenSecretManager(600_000L, 600_000L, BPID, null, false));
    return tokens;
  }

  /** A legacy (Writable) identifier: expiry, key id, then the user id's 4-byte length prefix. */
  private static Token<BlockTokenIdentifier> forgedToken(byte[] identifier) {
    return new Token<>(identifier, new byte[20], new Text("HDFS_BLOCK_TOKEN"), new Text("forged"));
  }

  @Test
  void anErrorWhileServingARequestIsAnsweredByClosingNotThrown() {
    ShimMetrics metrics = new ShimMetrics();
    ShortCircuitService svc =
        service(failingWith(new InternalError("a fault in a mapping")), null, metrics);
    AtomicReference<Reply> reply = new AtomicReference<>();
    Throwable escaped = null;
    try {
      reply.set(
          svc.handle(
              ShortCircuitService.OP_REQUEST_FDS,
              fdRequest(new Token<BlockTokenIdentifier>()),
              4242));
    } catch (Throwable t) {
      escaped = t;
    }
    assertNull(escaped, "handle() must answer an Error, not throw it to the worker");
    assertTrue(reply.get().closeOnly, "the connection is closed without a reply, as stock does");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.INTERNAL_ERROR), "counted");
  }

  @Test
  void aConnectionWhoseRequestHitAnErrorIsClosedNotLeftBusy() throws Exception {
    ShimMetrics metrics = new ShimMetrics();
    ShortCircuitService svc =
        service(failingWith(new LinkageError("a class failed to load")), null, metrics);
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
    // A pool thread that dies of an uncaught Throwable loses its task, as ThreadPoolExecutor's do.
    Executor pool =
        task -> {
          try {
            task.run();
          } catch (Throwable diesWithTheThread) {
            // the task is gone; nothing posts a reply
          }
        };
    ShimConfig config = ShimConfig.from(new Configuration(false));
    EmbeddedChannel channel =
        new EmbeddedChannel(
            new ShimConnectionHandler(
                svc,
                new SegmentRegistry(limits, metrics),
                limits,
                metrics,
                pool,
                config,
                ch -> new PeerIdentity(4242, 1000),
                Ticker.SYSTEM));
    channel.writeInbound(
        frame(ShortCircuitService.OP_REQUEST_FDS, fdRequest(new Token<BlockTokenIdentifier>())));
    channel.runPendingTasks();
    assertFalse(channel.isOpen(), "the connection must be closed; left open it stays BUSY forever");
    assertEquals(0, limits.clientCount(), "the connection's count was released");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.INTERNAL_ERROR), "counted");
  }

  @Test
  void aForgedTokenClaimingAHugeUserIdIsRefusedWithoutAllocatingIt() throws Exception {
    ByteArrayOutputStream id = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(id);
    WritableUtils.writeVLong(d, 0); // expiry date: the first byte 0 selects the legacy format
    WritableUtils.writeVInt(d, 1); // key id
    d.writeInt(Integer.MAX_VALUE); // user id length: new byte[2 GiB - 1] in readFieldsLegacy
    assertForgedTokenRefused(id.toByteArray());
  }

  @Test
  void aForgedTokenClaimingHugeStorageArraysIsRefusedWithoutAllocatingThem() throws Exception {
    ByteArrayOutputStream id = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(id);
    WritableUtils.writeVLong(d, 0);
    WritableUtils.writeVInt(d, 1);
    WritableUtils.writeString(d, "forger");
    WritableUtils.writeString(d, BPID);
    WritableUtils.writeVLong(d, BLOCK.getBlockId());
    WritableUtils.writeVInt(d, 1);
    WritableUtils.writeEnum(d, BlockTokenIdentifier.AccessMode.READ);
    WritableUtils.writeVInt(d, Integer.MAX_VALUE); // new StorageType[2^31 - 1]
    assertForgedTokenRefused(id.toByteArray());
  }

  private static void assertForgedTokenRefused(byte[] identifier) throws IOException {
    ShortCircuitService svc =
        service(failingWith(new AssertionError("served a forged token")), dataNodeTokens());
    Reply r =
        svc.handle(ShortCircuitService.OP_REQUEST_FDS, fdRequest(forgedToken(identifier)), 4242);
    assertFalse(r.closeOnly, "answered, not dropped by an Error");
    BlockOpResponseProto resp =
        BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
    assertEquals(Status.ERROR_ACCESS_TOKEN, resp.getStatus());
    assertTrue(r.closeAfter, "stock closes after ERROR_ACCESS_TOKEN");
  }

  @Test
  void realLegacyAndProtobufIdentifiersPassTheBoundsCheck() {
    for (boolean proto : new boolean[] {false, true}) {
      BlockTokenIdentifier id =
          new BlockTokenIdentifier(
              "hbase",
              BPID,
              BLOCK.getBlockId(),
              EnumSet.of(BlockTokenIdentifier.AccessMode.READ),
              new StorageType[] {StorageType.DISK, StorageType.SSD},
              new String[] {"DS-1", "DS-2"},
              proto);
      id.setExpiryDate(System.currentTimeMillis() + 600_000L);
      id.setKeyId(7);
      id.setHandshakeMsg(new byte[] {1, 2, 3});
      assertNull(TokenIdentifierBounds.problem(id.getBytes()), "proto=" + proto);
    }
  }
}
