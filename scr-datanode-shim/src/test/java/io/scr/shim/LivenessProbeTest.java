package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The liveness probe (op 127, sub-op PING) is answered by the event loop, so a client tells a stuck
 * request path (here: the only worker held inside the dataset) from a stuck process.
 */
class LivenessProbeTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-9", 1073741901L, 4, 1001);
  private static final int MAX = Integer.MAX_VALUE;

  /** {@code [00 1C][7F][varint 1][04]}: version 28, op 127, one byte of body, PING. */
  static final byte[] PING = {0, 28, 127, 1, ShortCircuitService.EXT_PING};

  /** A delimited {@code BlockOpResponseProto{status: SUCCESS}}. */
  private static final byte[] PONG = {2, 8, 0};

  @TempDir Path dir;

  private final ShimMetrics metrics = new ShimMetrics();
  private final ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);

  @Test
  void aPingIsAnsweredWhileTheOnlyWorkerIsStuckInTheDataset() throws Exception {
    FsDatasetSpi<?> dataset =
        FakeDataset.of(
            BLOCK,
            Files.write(dir.resolve("blk"), new byte[] {1, 2, 3, 4}),
            Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0}));
    CountDownLatch onWorker = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    AtomicBoolean workerFree = new AtomicBoolean();
    ShortCircuitService service =
        TestServices.withoutTokens(
            TestServices.holding(onWorker, letGo, () -> workerFree.set(true), dataset),
            registry,
            limits,
            metrics);
    Configuration conf = new Configuration(false);
    conf.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), false);
    conf.setInt(ScrShimKeys.WORKER_THREADS.name(), 1);
    Path socket = dir.resolve("dn-ping.sock");
    ShimServer server =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
    server.start();
    try (RawPeer busy = new RawPeer(socket.toString());
        RawPeer probe = new RawPeer(socket.toString())) {
      busy.sender.requestShortCircuitFds(BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      assertTrue(onWorker.await(20, TimeUnit.SECONDS), "the fd request holds the only worker");
      for (int i = 0; i < 3; i++) { // one probe connection serves probe after probe
        probe.writeRaw(PING);
        assertArrayEquals(PONG, readExactly(probe.in(), PONG.length), "SUCCESS, nothing more");
      }
      assertFalse(workerFree.get(), "answered while the worker was still stuck");
      letGo.countDown();
      assertEquals(Status.SUCCESS, busy.readBlockOpResponse().getStatus());
      FileInputStream[] fds = new FileInputStream[2];
      busy.receiveFds(fds);
      RawPeer.closeAll(fds);
      // Booked by the event loop once the answer is out, after the client may have read it.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (metrics.requests(ShimMetrics.OpKind.EXT_PING, Status.SUCCESS) < 3
          && System.nanoTime() - deadline < 0) {
        Thread.onSpinWait();
      }
      assertEquals(3, metrics.requests(ShimMetrics.OpKind.EXT_PING, Status.SUCCESS));
    } finally {
      letGo.countDown();
      server.close();
    }
  }

  @Test
  void aPingWithABodyIsMalformedAndClosesTheConnection() throws Exception {
    ShortCircuitService service = TestServices.probesOnly(registry, limits, metrics);
    Reply r = service.handle(ShortCircuitService.OP_SCR_EXTENSION, new byte[] {4, 0}, 1);
    assertTrue(r.closeOnly, "closed without a reply, as any malformed request");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.BAD_PROTOBUF));
  }

  static byte[] readExactly(InputStream in, int n) throws IOException {
    byte[] b = new byte[n];
    int off = 0;
    while (off < n) {
      int r = in.read(b, off, n - off);
      if (r < 0) {
        throw new IOException("closed after " + off + " bytes");
      }
      off += r;
    }
    return b;
  }
}
