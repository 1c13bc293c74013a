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
import java.util.EnumSet;
import java.util.List;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockPoolTokenSecretManager;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenSecretManager;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Block tokens are checked exactly as stock's {@code DataXceiver.checkAccess} checks them, and
 * enforced when the NameNode's exported keys say so, whatever the DataNode's own {@code
 * dfs.block.access.token.enable}.
 */
class ShimBlockTokenTest {
  private static final String BPID = "BP-7";
  private static final String OTHER_BPID = "BP-8";
  private static final ExtendedBlock BLOCK = new ExtendedBlock(BPID, 1073741825L, 4, 1001);
  private static final int MAX = Integer.MAX_VALUE;

  @TempDir Path dir;

  /** The NameNodes' side: they issue tokens for their pools. */
  private final BlockTokenSecretManager nameNode = nameNodeTokens(BPID);

  private final BlockTokenSecretManager otherNameNode = nameNodeTokens(OTHER_BPID);

  /** The DataNode's side: the keys each NameNode exported at registration. */
  private final BlockPoolTokenSecretManager dataNode = new BlockPoolTokenSecretManager();

  private final List<Reply> replies = new ArrayList<>();
  private Path data;
  private Path meta;

  /** The NameNode's answer, as the registration's ExportedBlockKeys carry it. */
  private boolean nameNodeEnablesTokens = true;

  private static BlockTokenSecretManager nameNodeTokens(String bpid) {
    return new BlockTokenSecretManager(600_000L, 600_000L, 0, 1, bpid, null, false);
  }

  @BeforeEach
  void setUp() throws IOException {
    for (BlockTokenSecretManager nn : new BlockTokenSecretManager[] {nameNode, otherNameNode}) {
      String bpid = nn == nameNode ? BPID : OTHER_BPID;
      BlockTokenSecretManager dn =
          new BlockTokenSecretManager(600_000L, 600_000L, bpid, null, false);
      dn.addKeys(nn.exportKeys());
      dataNode.addBlockPool(bpid, dn);
    }
    data = Files.write(dir.resolve("blk"), new byte[] {1, 2, 3, 4});
    meta = Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0});
  }

  @AfterEach
  void closeFds() {
    replies.forEach(Reply::closeOwnCopies);
  }

  private ShortCircuitService service() {
    FsDatasetSpi<?> ds = FakeDataset.of(BLOCK, data, meta);
    ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
    ShimMetrics metrics = new ShimMetrics();
    return new ShortCircuitService(
        new ShortCircuitService.DatasetAccess() {
          @Override
          public FsDatasetSpi<?> dataset() {
            return ds;
          }

          @Override
          public boolean blockTokensEnabled(String bpid) {
            return nameNodeEnablesTokens;
          }
        },
        dataNode,
        new SegmentRegistry(limits, metrics),
        limits,
        SegmentFactory.newBuilder().build(),
        metrics,
        DataNodeAccounting.NONE,
        true,
        Ticker.SYSTEM);
  }

  private Token<BlockTokenIdentifier> token(
      BlockTokenSecretManager issuer, ExtendedBlock block, AccessMode mode) throws IOException {
    return issuer.generateToken(block, EnumSet.of(mode), new StorageType[0], new String[0]);
  }

  private static OpRequestShortCircuitAccessProto request(Token<BlockTokenIdentifier> token) {
    return OpRequestShortCircuitAccessProto.newBuilder()
        .setHeader(
            BaseHeaderProto.newBuilder()
                .setBlock(PBHelperClient.convert(BLOCK))
                .setToken(PBHelperClient.convert(token)))
        .setMaxVersion(1)
        .build();
  }

  private Reply requestFds(Token<BlockTokenIdentifier> token) {
    Reply r =
        service().handle(ShortCircuitService.OP_REQUEST_FDS, request(token).toByteArray(), 4242);
    replies.add(r);
    return r;
  }

  private static Status status(Reply r) throws IOException {
    return BlockOpResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes)).getStatus();
  }

  @Test
  void aReadTokenForTheBlockIsServed() throws Exception {
    Reply r = requestFds(token(nameNode, BLOCK, AccessMode.READ));
    assertEquals(Status.SUCCESS, status(r));
    assertEquals(2, r.streams.size(), "data and meta fds");
  }

  @Test
  void aTokenOfAnotherPoolIsRefused() throws Exception {
    ExtendedBlock sameIdOtherPool =
        new ExtendedBlock(OTHER_BPID, BLOCK.getBlockId(), 4, BLOCK.getGenerationStamp());
    Reply r = requestFds(token(otherNameNode, sameIdOtherPool, AccessMode.READ));
    assertEquals(Status.ERROR_ACCESS_TOKEN, status(r));
    assertTrue(r.closeAfter, "stock closes after ERROR_ACCESS_TOKEN");
    assertTrue(r.streams.isEmpty(), "no fds");
  }

  @Test
  void aWriteOnlyTokenIsRefusedForReading() throws Exception {
    Reply r = requestFds(token(nameNode, BLOCK, AccessMode.WRITE));
    assertEquals(Status.ERROR_ACCESS_TOKEN, status(r));
    assertTrue(r.streams.isEmpty(), "no fds");
  }

  @Test
  void enforcementFollowsTheNameNodesExportedKeys() throws Exception {
    nameNodeEnablesTokens = true; // whatever dfs.block.access.token.enable says on the DataNode
    assertEquals(Status.ERROR_ACCESS_TOKEN, status(requestFds(new Token<>())));
    nameNodeEnablesTokens = false; // the NameNode issues no tokens: stock serves without one
    assertEquals(Status.SUCCESS, status(requestFds(new Token<>())));
  }

  @Test
  void tokenFailuresInsideABatchRefuseThoseItemsOnly() throws Exception {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(ShortCircuitService.EXT_BATCH_FDS);
    List<Token<BlockTokenIdentifier>> tokens = new ArrayList<>();
    tokens.add(token(nameNode, BLOCK, AccessMode.READ));
    tokens.add(token(nameNode, BLOCK, AccessMode.WRITE));
    tokens.add(
        token(
            otherNameNode,
            new ExtendedBlock(OTHER_BPID, BLOCK.getBlockId(), 4, BLOCK.getGenerationStamp()),
            AccessMode.READ));
    tokens.add(new Token<>());
    tokens.add(token(nameNode, BLOCK, AccessMode.READ));
    for (Token<BlockTokenIdentifier> t : tokens) {
      request(t).writeDelimitedTo(body);
    }
    Reply r = service().handle(ShortCircuitService.OP_SCR_EXTENSION, body.toByteArray(), 4242);
    replies.add(r);
    ByteArrayInputStream in = new ByteArrayInputStream(r.bytes);
    List<Status> statuses = new ArrayList<>();
    for (int i = 0; i < tokens.size(); i++) {
      statuses.add(BlockOpResponseProto.parseDelimitedFrom(in).getStatus());
    }
    assertEquals(
        List.of(
            Status.SUCCESS,
            Status.ERROR_ACCESS_TOKEN,
            Status.ERROR_ACCESS_TOKEN,
            Status.ERROR_ACCESS_TOKEN,
            Status.SUCCESS),
        statuses);
    assertEquals(4, r.streams.size(), "fds for the two good items only");
    assertFalse(r.closeAfter, "the connection stays for the next batch");
  }
}
