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
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
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
 * Who a client is must not fail open. A connection whose credentials cannot be read is refused;
 * peers whose pid is not visible (pid 0, another pid namespace) are counted per uid, not all under
 * one shared key; segment ids cannot be computed from earlier ones.
 */
class ShimPeerIdentityTest {
  private static final int MAX = Integer.MAX_VALUE;

  private final ShimMetrics metrics = new ShimMetrics();
  private final ClientLimits limits = new ClientLimits(1, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);

  /** Answers every fd request "not ready" without a dataset: enough to see who is served. */
  private final ShortCircuitService service =
      TestServices.withoutTokens(
          new ShortCircuitService.DatasetAccess() {
            @Override
            public FsDatasetSpi<?> dataset() {
              throw new AssertionError("not used");
            }

            @Override
            public boolean blockPoolReady(String bpid) {
              return false;
            }
          },
          registry,
          limits,
          metrics);

  private EmbeddedChannel connect(PeerIdentity.Lookup peer) {
    return new EmbeddedChannel(
        new ShimConnectionHandler(
            service,
            registry,
            limits,
            metrics,
            Runnable::run,
            ShimConfig.from(new Configuration(false)),
            peer,
            Ticker.SYSTEM));
  }

  private static ByteBuf fdRequestFrame() throws IOException {
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
    return Unpooled.wrappedBuffer(out.toByteArray());
  }

  /** Sends one fd request and returns the response the client reads. */
  private static BlockOpResponseProto ask(EmbeddedChannel ch) throws IOException {
    ch.writeInbound(fdRequestFrame());
    ch.runPendingTasks();
    ByteBuf reply = ch.readOutbound();
    assertNotNull(reply, "no reply");
    try {
      return BlockOpResponseProto.parseDelimitedFrom(new ByteBufInputStream(reply));
    } finally {
      reply.release();
    }
  }

  @Test
  void aConnectionWhoseCredentialsCannotBeReadIsRefused() {
    EmbeddedChannel ch =
        connect(
            channel -> {
              throw new IOException("getsockopt(SO_PEERCRED) failed");
            });
    ch.runPendingTasks();
    assertFalse(ch.isOpen(), "served under an anonymous shared key instead of refused");
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.NO_CREDENTIALS));
    assertEquals(0, limits.clientCount(), "nothing counted for it");
  }

  @Test
  void peersWhosePidIsNotVisibleAreLimitedPerUidNotAllUnderPidZero() throws IOException {
    // scr.shim.client.max.connections = 1 here.
    EmbeddedChannel alice = connect(channel -> new PeerIdentity(0, 1000));
    EmbeddedChannel bob = connect(channel -> new PeerIdentity(0, 1001));
    EmbeddedChannel alice2 = connect(channel -> new PeerIdentity(0, 1000));

    assertEquals("Not ready to serve the block pool, BP-7.", ask(alice).getMessage());
    assertEquals(
        "Not ready to serve the block pool, BP-7.",
        ask(bob).getMessage(),
        "another uid's pid-0 process used up this one's quota");
    BlockOpResponseProto refused = ask(alice2);
    assertEquals(Status.ERROR, refused.getStatus());
    assertTrue(refused.getMessage().contains("client uid 1000"), refused.getMessage());
    assertFalse(alice2.isOpen(), "the connection over the limit closes");
    assertTrue(alice.isOpen() && bob.isOpen());
  }

  @Test
  void segmentIdsCannotBeComputedFromAnEarlierOne() throws IOException {
    Assumptions.assumeTrue(ShmSupport.isAvailable(), "needs shared memory segments");
    Mix64 tlr = Mix64.ofThisThread();
    Set<Long> predicted = new HashSet<>();
    ShortCircuitShmResponseProto first = requestShm();
    // Every value this thread's ThreadLocalRandom would produce in the next 10,000 draws.
    long seed = Mix64.unmix(first.getId().getLo());
    for (int k = 1; k <= 10_000; k++) {
      predicted.add(Mix64.mix(seed + k * tlr.gamma));
    }
    ShortCircuitShmResponseProto second = requestShm();
    assertFalse(
        predicted.contains(second.getId().getHi()) || predicted.contains(second.getId().getLo()),
        "the second segment id was computed from the first one");
  }

  @Test
  void thePredictorUsedAboveDoesPredictThreadLocalRandom() {
    Mix64 tlr = Mix64.ofThisThread();
    long seen = ThreadLocalRandom.current().nextLong();
    long next = ThreadLocalRandom.current().nextLong();
    assertEquals(next, Mix64.mix(Mix64.unmix(seen) + tlr.gamma), "the predictor is not vacuous");
  }

  private ShortCircuitShmResponseProto requestShm() throws IOException {
    Reply r =
        service.handle(
            ShortCircuitService.OP_REQUEST_SHM,
            ShortCircuitShmRequestProto.newBuilder().setClientName("c").build().toByteArray(),
            4242);
    try {
      ShortCircuitShmResponseProto resp =
          ShortCircuitShmResponseProto.parseDelimitedFrom(new ByteArrayInputStream(r.bytes));
      assertEquals(Status.SUCCESS, resp.getStatus(), resp.getError());
      return resp;
    } finally {
      r.abandon(registry);
    }
  }

  /**
   * ThreadLocalRandom's output function (a murmur3 finalizer of a per-thread counter) and its
   * inverse: one output gives the counter, hence every later output.
   */
  private static final class Mix64 {
    private static final long M1 = 0xff51afd7ed558ccdL;
    private static final long M2 = 0xc4ceb9fe1a85ec53L;
    final long gamma;

    private Mix64(long gamma) {
      this.gamma = gamma;
    }

    /** Measures this thread's counter step from two consecutive draws. */
    static Mix64 ofThisThread() {
      long a = ThreadLocalRandom.current().nextLong();
      long b = ThreadLocalRandom.current().nextLong();
      return new Mix64(unmix(b) - unmix(a));
    }

    static long mix(long z) {
      z = (z ^ (z >>> 33)) * M1;
      z = (z ^ (z >>> 33)) * M2;
      return z ^ (z >>> 33);
    }

    static long unmix(long z) {
      z ^= z >>> 33;
      z *= inverse(M2);
      z ^= z >>> 33;
      z *= inverse(M1);
      return z ^ (z >>> 33);
    }

    /** The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration). */
    private static long inverse(long odd) {
      long x = odd;
      for (int i = 0; i < 6; i++) {
        x *= 2 - odd * x;
      }
      return x;
    }
  }
}
