package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.scr.core.protocol.ShortCircuitProtocol;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * Issue 16, cheaper opens: to an scr client (the marker {@link
 * ShortCircuitProtocol#FDS_WITH_REPLY_FIELD} in op 87 or in every request of a BATCH_FDS) the shim
 * sends the response and its fds in one {@code sendmsg}, so they arrive with the response's first
 * byte: one wake-up of the client and one system call fewer. A request without the marker (every
 * stock client) gets the stock order: the response, then the fds with a byte of their own. Observed
 * the way only a reader with room for control data can: after reading exactly one byte of the
 * reply, which fds came.
 */
class ShimFdsWithResponseTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-16", 1073741901L, 4, 1001);
  private static final int MAX = Integer.MAX_VALUE;

  @TempDir Path dir;

  private final ShimMetrics metrics = new ShimMetrics();
  private final ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);

  private ShimServer start(boolean onEventLoop, boolean extensions) throws IOException {
    Path data = Files.write(dir.resolve("blk"), new byte[] {7, 6, 5, 4});
    Path meta = Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0});
    org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi<?> dataset =
        FakeDataset.of(BLOCK, data, meta);
    ShortCircuitService service =
        new ShortCircuitService(
            () -> dataset,
            null,
            registry,
            limits,
            io.scr.shm.SegmentFactory.newBuilder().build(),
            metrics,
            DataNodeAccounting.NONE,
            extensions);
    Configuration conf = new Configuration(false);
    conf.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), onEventLoop);
    Path socket = dir.resolve("dn-" + onEventLoop + "-" + extensions + ".sock");
    ShimServer server =
        new ShimServer(socket, ShimConfig.from(conf), service, registry, limits, metrics);
    server.start();
    return server;
  }

  /** A connection that reads as the scr client does: control data taken on every read. */
  private static AFUNIXSocket connect(ShimServer server) throws IOException {
    AFUNIXSocket s = AFUNIXSocket.newInstance();
    s.connect(AFUNIXSocketAddress.of(server.socketPath().toFile()));
    s.setSoTimeout(20_000);
    s.setAncillaryReceiveBufferSize(512);
    return s;
  }

  /**
   * Sends {@code request}, reads one byte, and returns how many fds came with it; then reads the
   * rest of the reply, checks the block file, and sends the receipt.
   */
  private static int fdsWithFirstByte(AFUNIXSocket s, byte[] request, int answers)
      throws IOException {
    s.getOutputStream().write(request);
    InputStream in = s.getInputStream();
    int first = in.read();
    FileDescriptor[] early = received(s);
    // The rest: the (first) response's varint-prefixed message, the others, the data byte.
    byte[] rest = new byte[first];
    readFully(in, rest);
    assertEquals(Status.SUCCESS, BlockOpResponseProto.parseFrom(rest).getStatus());
    for (int i = 1; i < answers; i++) {
      assertEquals(
          Status.SUCCESS,
          BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in)).getStatus());
    }
    int dataByte = in.read();
    FileDescriptor[] late = received(s);
    assertEquals(0, early.length * late.length, "fds came once");
    FileDescriptor[] fds = early.length > 0 ? early : late;
    assertEquals(2 * answers, fds.length, "fds with the data byte at the latest");
    try (FileInputStream block = new FileInputStream(fds[0])) {
      assertEquals(7, block.read(), "the block file");
    } finally {
      for (int i = 1; i < fds.length; i++) {
        new FileInputStream(fds[i]).close();
      }
    }
    if (dataByte == ShortCircuitProtocol.USE_RECEIPT_VERIFICATION) {
      s.getOutputStream().write(0);
    }
    return early.length;
  }

  /** The fds received since the last call (junixsocket gives null or an empty array for none). */
  private static FileDescriptor[] received(AFUNIXSocket s) throws IOException {
    FileDescriptor[] fds = s.getReceivedFileDescriptors();
    return fds == null ? new FileDescriptor[0] : fds;
  }

  private static void readFully(InputStream in, byte[] b) throws IOException {
    for (int off = 0; off < b.length; ) {
      int n = in.read(b, off, b.length - off);
      if (n < 0) {
        throw new IOException("EOF after " + off + " of " + b.length + " bytes");
      }
      off += n;
    }
  }

  private static byte[] request(boolean marked) {
    return ShortCircuitProtocol.encodeRequestFds(
        BLOCK, new Token<BlockTokenIdentifier>(), null, marked);
  }

  @ParameterizedTest(name = "fd requests on the event loop: {0}")
  @ValueSource(booleans = {true, false})
  void anScrClientsFdsComeWithTheResponsesFirstByteAndAStockRequestsAfterIt(boolean onEventLoop)
      throws Exception {
    try (ShimServer server = start(onEventLoop, true);
        AFUNIXSocket s = connect(server)) {
      for (int i = 0; i < 3; i++) {
        assertEquals(2, fdsWithFirstByte(s, request(true), 1), "marked request " + i);
        assertEquals(0, fdsWithFirstByte(s, request(false), 1), "stock request " + i);
      }
      byte[] batch =
          ShortCircuitProtocol.encodeBatchRequestFds(
              List.of(BLOCK, BLOCK), List.of(new Token<>(), new Token<>()), null);
      assertEquals(4, fdsWithFirstByte(s, batch, 2), "op 127 BATCH_FDS, marked");
      OpRequestShortCircuitAccessProto plain =
          OpRequestShortCircuitAccessProto.newBuilder()
              .setHeader(
                  BaseHeaderProto.newBuilder()
                      .setBlock(PBHelperClient.convert(BLOCK))
                      .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
              .setMaxVersion(1)
              .setSupportsReceiptVerification(true)
              .build();
      byte[] unmarked =
          ShimClusterTest.extensionFrame(ShortCircuitService.EXT_BATCH_FDS, plain, plain);
      assertEquals(0, fdsWithFirstByte(s, unmarked, 2), "op 127 BATCH_FDS, not marked");
    }
    assertEquals(6 * 2 + 4 + 4, metrics.snapshot().get("fds_passed"));
    assertEquals(3 * 2 + 4, metrics.snapshot().get("fds_passed_with_response"));
  }

  @ParameterizedTest(name = "fd requests on the event loop: {0}")
  @ValueSource(booleans = {true, false})
  void withTheExtensionsOffTheMarkerIsIgnored(boolean onEventLoop) throws Exception {
    try (ShimServer server = start(onEventLoop, false);
        AFUNIXSocket s = connect(server)) {
      assertEquals(0, fdsWithFirstByte(s, request(true), 1));
    }
    assertEquals(0, metrics.snapshot().get("fds_passed_with_response"));
  }
}
