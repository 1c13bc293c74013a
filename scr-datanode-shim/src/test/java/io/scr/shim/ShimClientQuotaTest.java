package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.scr.shm.ShmSupport;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Quotas follow the user (a fork does not get fresh ones), the shim as a whole has a connection cap
 * refused at accept, and a request must arrive in full within a deadline (a client dribbling one
 * byte at a time cannot keep a partial frame alive).
 */
class ShimClientQuotaTest {
  private static final int MAX = Integer.MAX_VALUE;
  private static final long REQUEST_TIMEOUT_MS = 1000;

  private final ShimMetrics metrics = new ShimMetrics();

  private ShortCircuitService service(ClientLimits limits, SegmentRegistry registry) {
    return TestServices.withoutTokens(
        new ShortCircuitService.DatasetAccess() {
          @Override
          public FsDatasetSpi<?> dataset() {
            throw new AssertionError("not used");
          }

          @Override
          public boolean blockPoolReady(String bpid) {
            return false; // every fd request is answered "not ready": enough to see who is served
          }
        },
        registry,
        limits,
        metrics);
  }

  private EmbeddedChannel connect(ClientLimits limits, int pid, int uid) {
    Configuration conf = new Configuration(false);
    conf.setLong(ScrShimKeys.REQUEST_TIMEOUT_MS.name(), REQUEST_TIMEOUT_MS);
    SegmentRegistry registry = new SegmentRegistry(limits, metrics);
    EmbeddedChannel ch =
        new EmbeddedChannel(
            new ShimConnectionHandler(
                service(limits, registry),
                registry,
                limits,
                metrics,
                Runnable::run,
                ShimConfig.from(conf),
                c -> new PeerIdentity(pid, uid),
                Ticker.SYSTEM));
    ch.freezeTime(); // the deadlines run on the channel's clock, advanced by the test
    ch.runPendingTasks();
    return ch;
  }

  private static byte[] fdRequestFrame() throws IOException {
    byte[] body =
        OpRequestShortCircuitAccessProto.newBuilder()
            .setHeader(
                BaseHeaderProto.newBuilder()
                    .setBlock(PBHelperClient.convert(new ExtendedBlock("BP-7", 1L, 0, 1)))
                    .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
            .setMaxVersion(1)
            .build()
            .toByteArray();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(out);
    d.writeShort(RequestFrames.DATA_TRANSFER_VERSION);
    d.writeByte(ShortCircuitService.OP_REQUEST_FDS);
    d.writeByte(body.length); // < 128: a one-byte varint
    d.write(body);
    return out.toByteArray();
  }

  private static BlockOpResponseProto ask(EmbeddedChannel ch) throws IOException {
    ch.writeInbound(Unpooled.wrappedBuffer(fdRequestFrame()));
    ch.runPendingTasks();
    ByteBuf reply = ch.readOutbound();
    assertNotNull(reply, "no reply");
    try {
      return BlockOpResponseProto.parseDelimitedFrom(new ByteBufInputStream(reply));
    } finally {
      reply.release();
    }
  }

  private static void advance(EmbeddedChannel ch, long ms) {
    ch.advanceTimeBy(ms, TimeUnit.MILLISECONDS);
    ch.runScheduledPendingTasks();
    ch.runPendingTasks();
  }

  @Test
  void aForkedProcessSharesItsUsersConnectionQuota() throws IOException {
    // Per process 1,000 connections, per user 2.
    ClientLimits limits = new ClientLimits(1000, MAX, MAX, 2, MAX, MAX, MAX);
    EmbeddedChannel parent = connect(limits, 100, 1000);
    EmbeddedChannel child = connect(limits, 101, 1000); // a fork: same uid, another pid
    EmbeddedChannel grandchild = connect(limits, 102, 1000);
    EmbeddedChannel otherUser = connect(limits, 200, 1001);

    assertEquals("Not ready to serve the block pool, BP-7.", ask(parent).getMessage());
    assertEquals("Not ready to serve the block pool, BP-7.", ask(child).getMessage());
    BlockOpResponseProto refused = ask(grandchild);
    assertEquals(Status.ERROR, refused.getStatus());
    assertTrue(
        refused.getMessage().contains(ScrShimKeys.UID_MAX_CONNECTIONS.name())
            && refused.getMessage().contains("uid 1000"),
        refused.getMessage());
    assertFalse(grandchild.isOpen(), "the connection over the user's limit closes");
    assertEquals(
        "Not ready to serve the block pool, BP-7.",
        ask(otherUser).getMessage(),
        "another user's quota is its own");

    parent.close();
    assertEquals(
        "Not ready to serve the block pool, BP-7.",
        ask(connect(limits, 103, 1000)).getMessage(),
        "a closed connection gives its place back to the user");
  }

  @Test
  void aForkedProcessSharesItsUsersSegmentQuota() throws IOException {
    Assumptions.assumeTrue(ShmSupport.isAvailable(), "needs shared memory segments");
    ClientLimits limits = new ClientLimits(MAX, 100, MAX, MAX, 1, MAX, MAX);
    SegmentRegistry registry = new SegmentRegistry(limits, metrics);
    ShortCircuitService svc = service(limits, registry);
    assertTrue(
        limits.openConnection(100, 1000) == null && limits.openConnection(101, 1000) == null);
    Reply parent = requestShm(svc, 100);
    Reply child = requestShm(svc, 101);
    try {
      assertEquals(Status.SUCCESS, shmStatus(parent).getStatus());
      ShortCircuitShmResponseProto refused = shmStatus(child);
      assertEquals(Status.ERROR_UNSUPPORTED, refused.getStatus(), "stock clients stop asking");
      assertTrue(
          refused.getError().contains(ScrShimKeys.UID_MAX_SEGMENTS.name()), refused.getError());
    } finally {
      parent.abandon(registry);
      child.abandon(registry);
    }
  }

  private static Reply requestShm(ShortCircuitService svc, int pid) {
    return svc.handle(
        ShortCircuitService.OP_REQUEST_SHM,
        ShortCircuitShmRequestProto.newBuilder().setClientName("c").build().toByteArray(),
        pid);
  }

  private static ShortCircuitShmResponseProto shmStatus(Reply r) throws IOException {
    return ShortCircuitShmResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
  }

  @Test
  void connectionsOverTheShimsCapAreRefusedAtAccept() throws IOException {
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX, MAX, MAX, MAX, 2);
    EmbeddedChannel a = connect(limits, 100, 1000);
    EmbeddedChannel b = connect(limits, 200, 1001);
    EmbeddedChannel c = connect(limits, 300, 1002);
    assertFalse(c.isOpen(), "closed at accept, before it sends anything");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.MAX_CONNECTIONS));
    assertEquals(2, limits.clientCount(), "the refused connection counted for nobody");
    assertTrue(a.isOpen() && b.isOpen());
    assertEquals("Not ready to serve the block pool, BP-7.", ask(a).getMessage());

    b.close();
    EmbeddedChannel d = connect(limits, 300, 1002);
    assertTrue(d.isOpen(), "a closed connection frees its place");
    assertEquals("Not ready to serve the block pool, BP-7.", ask(d).getMessage());
  }

  @Test
  void aClientDribblingItsRequestIsClosedAtTheRequestDeadline() throws IOException {
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
    EmbeddedChannel dribbler = connect(limits, 100, 1000);
    byte[] frame = fdRequestFrame();
    int sent = 0;
    // One byte every 300 ms: each would reset an idle timer, never the request deadline.
    while (dribbler.isOpen() && sent < frame.length - 1) {
      dribbler.writeInbound(Unpooled.wrappedBuffer(frame, sent++, 1));
      advance(dribbler, 300);
    }
    assertFalse(dribbler.isOpen(), "closed while its frame was still partial");
    assertTrue(sent <= 5, "closed within the deadline (1 s), after " + sent + " bytes");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.REQUEST_TIMEOUT));
    assertEquals(0, limits.clientCount());

    // A request that arrives in pieces within the deadline is served, and the next one gets a
    // deadline of its own.
    EmbeddedChannel slow = connect(limits, 101, 1000);
    slow.writeInbound(Unpooled.wrappedBuffer(frame, 0, 10));
    advance(slow, 900);
    slow.writeInbound(Unpooled.wrappedBuffer(frame, 10, frame.length - 10));
    slow.runPendingTasks();
    ByteBuf reply = slow.readOutbound();
    assertNotNull(reply, "served");
    reply.release();
    advance(slow, 5 * REQUEST_TIMEOUT_MS);
    assertTrue(slow.isOpen(), "no deadline runs between requests (the idle close does)");
  }

  @Test
  void aConnectionOverItsLimitMustSendItsRequestPromptly() {
    ClientLimits limits = new ClientLimits(1, MAX, MAX);
    EmbeddedChannel first = connect(limits, 100, 1000);
    EmbeddedChannel over = connect(limits, 100, 1000);
    advance(over, REQUEST_TIMEOUT_MS + 1);
    assertFalse(over.isOpen(), "an over-limit connection cannot sit until the 60 s idle close");
    assertTrue(first.isOpen());
  }
}
