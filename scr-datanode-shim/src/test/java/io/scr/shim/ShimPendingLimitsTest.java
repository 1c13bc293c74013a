package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.SegmentFactory;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fds opened for replies a client has not read are capped per client process, per user and
 * shim-wide, so a client that stops reading cannot pin the DataNode's fds (every reply's fds stay
 * open until it is read or the write deadline); other clients keep being served, and every
 * reservation comes back when the fds are handed over or closed.
 */
class ShimPendingLimitsTest {
  private static final int MAX = Integer.MAX_VALUE;
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-7", 1073741825L, 4, 1001);

  @TempDir Path dir;

  private final ShimMetrics metrics = new ShimMetrics();
  private final List<Reply> unread = new ArrayList<>();
  private FsDatasetSpi<?> dataset;

  @BeforeEach
  void replica() throws IOException {
    dataset =
        FakeDataset.of(
            BLOCK,
            Files.write(dir.resolve("blk"), new byte[] {1, 2, 3, 4}),
            Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0}));
  }

  @AfterEach
  void closeAll() {
    unread.forEach(Reply::closeOwnCopies);
  }

  private ShortCircuitService service(ClientLimits limits) {
    return new ShortCircuitService(
        () -> dataset,
        null,
        new SegmentRegistry(limits, metrics),
        limits,
        SegmentFactory.newBuilder().build(),
        metrics,
        DataNodeAccounting.NONE,
        true,
        Ticker.SYSTEM);
  }

  private static ClientLimits pendingFds(int perClient, int perUid, int total) {
    return new ClientLimits(MAX, MAX, MAX, MAX, MAX, MAX, MAX, perClient, perUid, total, MAX);
  }

  private static OpRequestShortCircuitAccessProto request() {
    return OpRequestShortCircuitAccessProto.newBuilder()
        .setHeader(
            BaseHeaderProto.newBuilder()
                .setBlock(PBHelperClient.convert(BLOCK))
                .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
        .setMaxVersion(1)
        .build();
  }

  /** One fd request whose reply the client does not read (kept until the test closes it). */
  private BlockOpResponseProto askAndDoNotRead(ShortCircuitService svc, int pid)
      throws IOException {
    Reply r = svc.handle(ShortCircuitService.OP_REQUEST_FDS, request().toByteArray(), pid);
    unread.add(r);
    return BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
  }

  @Test
  void aClientThatDoesNotReadCannotPinMoreThanItsFdsAndOthersAreStillServed() throws Exception {
    ClientLimits limits = pendingFds(4, MAX, MAX);
    ShortCircuitService svc = service(limits);
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 100).getStatus());
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 100).getStatus());
    BlockOpResponseProto refused = askAndDoNotRead(svc, 100);
    assertEquals(Status.ERROR, refused.getStatus(), "the client reads this block the stock way");
    assertTrue(
        refused.getMessage().contains(ScrShimKeys.CLIENT_MAX_PENDING_FDS.name()),
        refused.getMessage());
    assertEquals(4, limits.pendingFds(), "no fd opened for the refused request");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.PENDING_FDS));

    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 200).getStatus(), "another client served");

    unread.get(0).closeOwnCopies(); // the first reply's fds were handed over (or closed)
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 100).getStatus(), "room again");

    unread.forEach(Reply::closeOwnCopies);
    assertEquals(0, limits.pendingFds());
    assertEquals(0, limits.clientCount(), "nothing stays counted");
  }

  @Test
  void theShimWideCapBoundsAllClientsTogether() throws Exception {
    ClientLimits limits = pendingFds(MAX, MAX, 4);
    ShortCircuitService svc = service(limits);
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 100).getStatus());
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 200).getStatus());
    BlockOpResponseProto refused = askAndDoNotRead(svc, 300);
    assertEquals(Status.ERROR, refused.getStatus());
    assertTrue(
        refused.getMessage().contains(ScrShimKeys.MAX_PENDING_FDS.name()), refused.getMessage());
  }

  @Test
  void forkedProcessesShareTheirUsersFdCap() throws Exception {
    ClientLimits limits = pendingFds(MAX, 2, MAX);
    ShortCircuitService svc = service(limits);
    assertTrue(
        limits.openConnection(100, 1000) == null && limits.openConnection(101, 1000) == null);
    assertEquals(Status.SUCCESS, askAndDoNotRead(svc, 100).getStatus());
    BlockOpResponseProto refused = askAndDoNotRead(svc, 101);
    assertTrue(
        refused.getMessage().contains(ScrShimKeys.UID_MAX_PENDING_FDS.name()),
        refused.getMessage());
  }

  @Test
  void aBatchGetsFdsUpToTheCapAndErrorsForTheRest() throws Exception {
    ClientLimits limits = pendingFds(6, MAX, MAX);
    ShortCircuitService svc = service(limits);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(ShortCircuitService.EXT_BATCH_FDS);
    for (int i = 0; i < 5; i++) {
      request().writeDelimitedTo(body);
    }
    Reply r = svc.handle(ShortCircuitService.OP_SCR_EXTENSION, body.toByteArray(), 100);
    unread.add(r);
    ByteArrayInputStream in = new ByteArrayInputStream(r.bytes);
    List<Status> statuses = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      statuses.add(BlockOpResponseProto.parseDelimitedFrom(in).getStatus());
    }
    assertEquals(
        List.of(Status.SUCCESS, Status.SUCCESS, Status.SUCCESS, Status.ERROR, Status.ERROR),
        statuses);
    assertEquals(6, r.streams.size());
    r.abandon(new SegmentRegistry(limits, metrics)); // the client never read it
    assertEquals(0, limits.pendingFds(), "an abandoned reply gives its fds back");
  }

  @Test
  void replyBytesAreCappedPerClientButOneReplyAlwaysGoesOut() {
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX, MAX, MAX, MAX, MAX, MAX, MAX, MAX, 1000);
    assertTrue(limits.reserveReplyBytes(100, 5000), "one reply, whatever its size");
    assertFalse(limits.reserveReplyBytes(100, 10), "nothing more while it is unread");
    assertTrue(limits.reserveReplyBytes(200, 10), "another client is not affected");
    limits.releaseReplyBytes(100, 5000);
    assertTrue(limits.reserveReplyBytes(100, 900));
    assertTrue(limits.reserveReplyBytes(100, 100));
    assertFalse(limits.reserveReplyBytes(100, 1));
    limits.releaseReplyBytes(100, 1000);
    limits.releaseReplyBytes(200, 10);
    assertEquals(0, limits.clientCount());
  }
}
