package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Random;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Op-127 fuzz: seeded random and mutated BATCH_RELEASE / BATCH_FDS / HELLO bodies. The service
 * never throws, every reply stays small (a batch cannot make the DataNode build a large reply), a
 * batch passes at most 252 fds, and once the replies are dropped (the client gone) no fd,
 * reservation or client count is left. Reproduce a failure with {@code -Dscr.fuzz.seed=<seed>}.
 */
class ExtensionFuzzTest {
  private static final int ITERATIONS = 3000;
  private static final int MAX = Integer.MAX_VALUE;
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-7", 1073741825L, 4, 1001);

  /** The largest reply an op-127 request may produce: 126 fd answers with stock's messages. */
  private static final int MAX_REPLY_BYTES = 32 * 1024;

  @TempDir Path dir;

  @Test
  void randomExtensionRequestsAreAnsweredSmallAndLeaveNothingBehind() throws Exception {
    long seed = Long.getLong("scr.fuzz.seed", System.nanoTime());
    Random rnd = new Random(seed);
    Path data = Files.write(dir.resolve("blk"), new byte[] {1, 2, 3, 4});
    Path meta = Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0});
    ShimMetrics metrics = new ShimMetrics();
    ClientLimits limits = new ClientLimits(MAX, 4, 64, MAX, MAX, MAX, MAX, 600, MAX, 600, MAX);
    SegmentRegistry registry = new SegmentRegistry(limits, metrics);
    ShortCircuitService svc =
        TestServices.withoutTokens(
            () -> FakeDataset.of(BLOCK, data, meta), registry, limits, metrics);
    long fdsBefore = openFds();
    for (int i = 0; i < ITERATIONS; i++) {
      byte[] body = body(rnd);
      Reply r;
      try {
        r = svc.handle(ShortCircuitService.OP_SCR_EXTENSION, body, 1 + rnd.nextInt(3));
      } catch (Throwable t) {
        throw new AssertionError("seed " + seed + ", iteration " + i + ": handle() threw", t);
      }
      assertNotNull(r, "seed " + seed);
      assertTrue(
          r.bytes.length <= MAX_REPLY_BYTES,
          "seed " + seed + ", iteration " + i + ": a reply of " + r.bytes.length + " bytes");
      assertTrue(r.streams.size() <= FdPassing.MAX_FDS, "seed " + seed);
      r.abandon(registry); // the client went away before reading it
    }
    assertEquals(0, limits.pendingFds(), "seed " + seed + ": fd reservations left");
    assertEquals(0, limits.clientCount(), "seed " + seed + ": client counts left");
    assertEquals(0, metrics.snapshot().get("live.slots"), "seed " + seed);
    assertTrue(openFds() <= fdsBefore + 2, "seed " + seed + ": fds leaked");
  }

  private static long openFds() throws IOException {
    try (var s = Files.list(Paths.get("/proc/self/fd"))) {
      return s.count();
    }
  }

  private static byte[] body(Random rnd) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int kind = rnd.nextInt(6);
    switch (kind) {
      case 0: // random bytes, random sub-op
        byte[] junk = new byte[rnd.nextInt(200)];
        rnd.nextBytes(junk);
        out.write(junk);
        return out.toByteArray();
      case 1:
        out.write(ShortCircuitService.EXT_HELLO);
        break;
      case 2:
      case 3:
        out.write(ShortCircuitService.EXT_BATCH_RELEASE);
        int releases = rnd.nextInt(rnd.nextBoolean() ? 20 : 700);
        for (int i = 0; i < releases; i++) {
          ReleaseShortCircuitAccessRequestProto.newBuilder()
              .setSlotId(
                  ShortCircuitShmSlotProto.newBuilder()
                      .setShmId(
                          ShortCircuitShmIdProto.newBuilder()
                              .setHi(rnd.nextLong())
                              .setLo(rnd.nextLong()))
                      .setSlotIdx(rnd.nextInt(300) - 50))
              .build()
              .writeDelimitedTo(out);
        }
        break;
      default:
        out.write(ShortCircuitService.EXT_BATCH_FDS);
        int requests = rnd.nextInt(rnd.nextBoolean() ? 10 : 140);
        for (int i = 0; i < requests; i++) {
          long gs = rnd.nextInt(4) == 0 ? 999 : BLOCK.getGenerationStamp();
          OpRequestShortCircuitAccessProto.newBuilder()
              .setHeader(
                  BaseHeaderProto.newBuilder()
                      .setBlock(
                          PBHelperClient.convert(
                              new ExtendedBlock("BP-7", BLOCK.getBlockId(), 4, gs)))
                      .setToken(PBHelperClient.convert(new Token<BlockTokenIdentifier>())))
              .setMaxVersion(rnd.nextInt(3))
              .build()
              .writeDelimitedTo(out);
        }
        break;
    }
    byte[] b = out.toByteArray();
    // Mutate some: flip bytes, truncate, or append garbage.
    int m = rnd.nextInt(4);
    if (m == 1 && b.length > 1) {
      for (int k = 0; k < 1 + rnd.nextInt(4); k++) {
        b[1 + rnd.nextInt(b.length - 1)] ^= (byte) (1 + rnd.nextInt(255));
      }
    } else if (m == 2 && b.length > 1) {
      b = java.util.Arrays.copyOf(b, 1 + rnd.nextInt(b.length - 1));
    } else if (m == 3) {
      b = java.util.Arrays.copyOf(b, b.length + 1 + rnd.nextInt(8));
      b[b.length - 1] = (byte) rnd.nextInt(256);
    }
    return b;
  }
}
