package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.Segment;
import io.scr.shm.ShmId;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.ResourceSnapshot;
import io.scr.testing.StockNative;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenSecretManager;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeTestUtils;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm.SlotId;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.CodedOutputStream;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode C: the stock DFSClient with libhadoop reads through the shim. One cluster for every check in
 * this class (a start costs seconds); block tokens are on so token checks are real.
 */
class ShimClusterTest {
  static final int BLOCK_SIZE = 256 * 1024;
  static final int MAX_CONNECTIONS = 64;
  static final long INVALIDATION_MS = 100;

  static {
    JvmSingletons.warm(); // before the extension takes its leak baseline
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK_SIZE)
          .mode(DataNodeMode.SHIM)
          .configure(
              c -> {
                c.setBoolean("dfs.block.access.token.enable", true);
                c.setInt(ScrShimKeys.CLIENT_MAX_CONNECTIONS.name(), MAX_CONNECTIONS);
                c.setLong(ScrShimKeys.INVALIDATION_INTERVAL_MS.name(), INVALIDATION_MS);
              })
          .buildExtension();

  @BeforeAll
  static void stockClientNeedsLibhadoop() {
    StockNative.requireAvailable();
  }

  static MiniDfs dfs() {
    return DFS.dfs();
  }

  static ScrShimPlugin plugin() throws ReflectiveOperationException {
    DataNode dn = dfs().cluster().getDataNodes().get(0);
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof ScrShimPlugin shim) {
        return shim;
      }
    }
    throw new AssertionError("no ScrShimPlugin in " + plugins);
  }

  /** Reads the whole file with pread; returns [bytes..., short-circuit byte count at the end]. */
  static byte[] readAll(DistributedFileSystem fs, String path, int length, long[] scBytes)
      throws IOException {
    byte[] read = new byte[length];
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path(path))) {
      in.readFully(0, read);
      scBytes[0] = in.getReadStatistics().getTotalShortCircuitBytesRead();
    }
    return read;
  }

  @Test
  void stockClientReadsThroughTheShimShortCircuit() throws Exception {
    assertTrue(plugin().awaitServing(30_000), "shim not serving: " + plugin().failure());
    int length = 3 * BLOCK_SIZE + 1234;
    byte[] written = dfs().writeRandomFile("/modec/file", length, 42);

    long[] sc = new long[1];
    byte[] viaShim = readAll(dfs().fileSystem(), "/modec/file", length, sc);
    DistributedFileSystem tcp =
        dfs().newFileSystem(c -> c.setBoolean("dfs.client.read.shortcircuit", false));
    long[] tcpSc = new long[1];
    byte[] viaTcp = readAll(tcp, "/modec/file", length, tcpSc);

    assertArrayEquals(written, viaShim);
    assertArrayEquals(viaTcp, viaShim);
    assertEquals(length, sc[0], "every byte should be short-circuit through the shim");
    assertEquals(0, tcpSc[0]);

    Map<String, Long> counters = plugin().counters();
    assertTrue(counters.get("fds_passed") >= 8, counters.toString());
    assertNotNull(counters.get("requests.request_fds.success"), counters.toString());
    assertTrue(counters.get("live.segments") >= 1, "stock client should use shm: " + counters);
    assertTrue(counters.get("live.slots") >= 1, counters.toString());
  }

  static String socket() {
    return dfs().socketPath(0);
  }

  static final int PID = (int) ProcessHandle.current().pid();

  static LocatedBlock firstBlock(String path, int length, long seed) throws IOException {
    dfs().writeRandomFile(path, length, seed);
    return dfs().fileSystem().getClient().getLocatedBlocks(path, 0).get(0);
  }

  /** Waits for a condition that another thread (the shim's event loop) makes true. */
  static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(5); // the shim exposes no latch for these; bounded poll
    }
  }

  static void assertStillServes() throws Exception {
    long[] sc = new long[1];
    byte[] data = dfs().writeRandomFile("/modec/still-serving", 4096, 99);
    assertArrayEquals(data, readAll(dfs().fileSystem(), "/modec/still-serving", 4096, sc));
    assertEquals(4096, sc[0], "short-circuit reads must still work");
  }

  @Test
  void segmentsSlotsReceiptsAndReleaseFollowStockSemantics() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    LocatedBlock lb = firstBlock("/modec/slots", 10_000, 3);
    SegmentRegistry registry = plugin().registry();
    long segmentsBefore = plugin().counters().get("live.segments");
    try (RawPeer shmPeer = new RawPeer(socket())) {
      shmPeer.sender.requestShortCircuitShm("shim-test");
      ShortCircuitShmResponseProto resp = shmPeer.readShmResponse();
      assertEquals(Status.SUCCESS, resp.getStatus(), resp.toString());
      FileInputStream[] shmFd = new FileInputStream[1];
      assertEquals(0, shmPeer.receiveFds(shmFd), "shm response carries the byte 0");
      ShmId id = ShmId.of(resp.getId().getHi(), resp.getId().getLo());
      ShortCircuitShm.ShmId stockId =
          new ShortCircuitShm.ShmId(resp.getId().getHi(), resp.getId().getLo());
      try (Segment seg = Segment.map(id, shmFd[0].getFD(), 8192)) {
        shmFd[0].close();
        assertEquals(128, seg.slotCount());
        SegmentRegistry.ShimSegment shimSeg = registry.find(id, PID);
        assertNotNull(shimSeg);
        assertNull(registry.find(id, PID + 1), "another client must not see this segment");

        // A slot whose VALID bit the client did not set is refused, as stock refuses it.
        try (RawPeer p = new RawPeer(socket())) {
          p.sender.requestShortCircuitFds(
              lb.getBlock(), lb.getBlockToken(), new SlotId(stockId, 5), 1, true);
          BlockOpResponseProto r = p.readBlockOpResponse();
          assertEquals(Status.ERROR, r.getStatus());
          assertTrue(r.getMessage().contains("not marked as valid"), r.getMessage());
        }

        // With the receipt: the slot stays registered until released.
        seg.slot(0).makeValid();
        SlotId slot0 = new SlotId(stockId, 0);
        try (RawPeer p = new RawPeer(socket())) {
          p.sender.requestShortCircuitFds(lb.getBlock(), lb.getBlockToken(), slot0, 1, true);
          BlockOpResponseProto r = p.readBlockOpResponse();
          assertEquals(Status.SUCCESS, r.getStatus(), r.toString());
          assertEquals(1, r.getShortCircuitAccessVersion());
          FileInputStream[] fds = new FileInputStream[2];
          assertEquals(1, p.receiveFds(fds), "USE_RECEIPT_VERIFICATION");
          try {
            assertNotNull(fds[0]);
            assertNotNull(fds[1]);
            byte[] header = new byte[7];
            assertEquals(7, fds[1].read(header));
            assertEquals(1, ((header[0] & 0xff) << 8) | (header[1] & 0xff), "meta version");
            assertEquals(10_000, fds[0].getChannel().size());
          } finally {
            RawPeer.closeAll(fds);
          }
          p.socket.getOutputStream().write(0); // the receipt
          assertNotNull(shimSeg.ref(0), "registered while the fds are in use");
          // Release on the same connection (the shim keeps serving it after the receipt).
          p.sender.releaseShortCircuitFds(slot0);
          ReleaseShortCircuitAccessResponseProto rel = p.readReleaseResponse();
          assertEquals(Status.SUCCESS, rel.getStatus(), rel.toString());
          assertNull(shimSeg.ref(0));
          assertTrue(!seg.slot(0).isValid(), "release clears VALID");
          // A second release of the same slot is ERROR_INVALID, as stock.
          p.sender.releaseShortCircuitFds(slot0);
          assertEquals(Status.ERROR_INVALID, p.readReleaseResponse().getStatus());
          // A slot of an unknown segment: ERROR_INVALID with stock's message.
          ShortCircuitShm.ShmId unknown = new ShortCircuitShm.ShmId(1, 2);
          p.sender.releaseShortCircuitFds(new SlotId(unknown, 0));
          ReleaseShortCircuitAccessResponseProto bad = p.readReleaseResponse();
          assertEquals(Status.ERROR_INVALID, bad.getStatus());
          assertEquals(
              "there is no shared memory segment registered with shmId "
                  + "00000000000000010000000000000002",
              bad.getError());
        }

        // Without the receipt (client closes): the shim unregisters the slot.
        seg.slot(1).makeValid();
        try (RawPeer p = new RawPeer(socket())) {
          p.sender.requestShortCircuitFds(
              lb.getBlock(), lb.getBlockToken(), new SlotId(stockId, 1), 1, true);
          assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
          FileInputStream[] fds = new FileInputStream[2];
          p.receiveFds(fds);
          RawPeer.closeAll(fds);
        }
        await("slot 1 unregistered after a missing receipt", () -> shimSeg.ref(1) == null);
        assertTrue(!seg.slot(1).isValid());
        assertTrue(plugin().counters().get("rejections.receipt_missing") >= 1);
      }
    }
    // The shm connection closed: the segment is gone.
    await(
        "segment freed when its connection closed",
        () -> {
          try {
            return plugin().counters().get("live.segments") == segmentsBefore;
          } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
          }
        });

    // Any byte on a shm connection frees the segment and closes it (stock semantics).
    try (RawPeer shmPeer = new RawPeer(socket())) {
      shmPeer.sender.requestShortCircuitShm("shim-test-2");
      ShortCircuitShmResponseProto resp = shmPeer.readShmResponse();
      FileInputStream[] shmFd = new FileInputStream[1];
      shmPeer.receiveFds(shmFd);
      RawPeer.closeAll(shmFd);
      ShmId id = ShmId.of(resp.getId().getHi(), resp.getId().getLo());
      assertNotNull(registry.find(id, PID));
      shmPeer.writeRaw(new byte[] {1});
      assertTrue(shmPeer.closedByPeer());
      await("segment freed after data on its socket", () -> registry.find(id, PID) == null);
    }
  }

  @Test
  void errorsUseStockStatusesAndMessages() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    LocatedBlock lb = firstBlock("/modec/errors", 5000, 4);
    ExtendedBlock good = lb.getBlock();
    FsDatasetSpi<?> ds = dfs().cluster().getDataNodes().get(0).getFSDataset();

    ExtendedBlock unknown = new ExtendedBlock(good.getBlockPoolId(), good.getBlockId() + 1_000_000);
    unknown.setGenerationStamp(good.getGenerationStamp());
    ExtendedBlock wrongGs = new ExtendedBlock(good);
    wrongGs.setGenerationStamp(good.getGenerationStamp() + 7);
    for (ExtendedBlock b : new ExtendedBlock[] {unknown, wrongGs}) {
      String stockMessage = null;
      try {
        ds.getBlockInputStream(b, 0).close();
      } catch (IOException e) {
        stockMessage = e.getMessage();
      }
      assertNotNull(stockMessage);
      // Tokens are checked before the replica; sign one for this (possibly unknown) block.
      Token<BlockTokenIdentifier> token = tokenFor(b, 600_000);
      try (RawPeer p = new RawPeer(socket())) {
        p.sender.requestShortCircuitFds(b, token, null, 1, true);
        BlockOpResponseProto r = p.readBlockOpResponse();
        assertEquals(Status.ERROR, r.getStatus());
        assertEquals(stockMessage, r.getMessage());
      }
    }

    try (RawPeer p = new RawPeer(socket())) {
      p.sender.requestShortCircuitFds(good, lb.getBlockToken(), null, 0, true);
      BlockOpResponseProto r = p.readBlockOpResponse();
      assertEquals(Status.ERROR_UNSUPPORTED, r.getStatus());
      assertEquals(1, r.getShortCircuitAccessVersion());
      assertEquals(
          "Your client is too old to read this block!  Its format version is 1, but the highest"
              + " format version you can read is 0",
          r.getMessage());
    }

    // Forged token: ERROR_ACCESS_TOKEN, no fds, connection closed.
    Token<BlockTokenIdentifier> valid = lb.getBlockToken();
    Token<BlockTokenIdentifier> forged =
        new Token<>(
            valid.getIdentifier(),
            "not the password".getBytes(),
            valid.getKind(),
            valid.getService());
    Token<BlockTokenIdentifier> expired = tokenFor(good, -60_000);
    long before = plugin().counters().getOrDefault("rejections.access_token", 0L);
    for (Token<BlockTokenIdentifier> bad : List.of(forged, expired)) {
      try (RawPeer p = new RawPeer(socket())) {
        p.sender.requestShortCircuitFds(good, bad, null, 1, true);
        BlockOpResponseProto r = p.readBlockOpResponse();
        assertEquals(Status.ERROR_ACCESS_TOKEN, r.getStatus());
        assertTrue(!r.hasMessage());
        assertTrue(p.closedByPeer(), "stock closes the connection after a bad token");
      }
    }
    assertEquals(before + 2, plugin().counters().get("rejections.access_token"));
    // The valid token still works.
    try (RawPeer p = new RawPeer(socket())) {
      p.sender.requestShortCircuitFds(good, valid, null, 1, false);
      assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
      FileInputStream[] fds = new FileInputStream[2];
      assertEquals(0, p.receiveFds(fds), "DO_NOT_USE_RECEIPT_VERIFICATION");
      RawPeer.closeAll(fds);
    }
  }

  static Token<BlockTokenIdentifier> tokenFor(ExtendedBlock b, long lifetimeMs) throws IOException {
    BlockTokenSecretManager sm =
        dfs().cluster().getNamesystem().getBlockManager().getBlockTokenSecretManager();
    sm.setTokenLifetime(lifetimeMs);
    try {
      return sm.generateToken(
          b, EnumSet.of(BlockTokenIdentifier.AccessMode.READ), new StorageType[0], new String[0]);
    } finally {
      sm.setTokenLifetime(TimeUnit.MINUTES.toMillis(600));
    }
  }

  @Test
  void malformedInputClosesTheConnectionAndTheServerKeepsServing() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    byte[][] hostile = {
      {0x00, 0x1B, 0x57, 0x00}, // wrong version 27
      {0x00, 0x1C, 0x51, 0x00}, // READ_BLOCK: not served by the shim
      {0x00, 0x1C, 0x7F, 0x01, 0x09}, // op 127 with an unknown extension
      {0x00, 0x1C, 0x57, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01},
      {0x00, 0x1C, 0x57, (byte) 0x80, (byte) 0x80, 0x40}, // 1 MiB body: oversized
      {0x00, 0x1C, 0x57, 0x03, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF}, // garbage protobuf
      {0x00, 0x1C, 0x59, 0x00}, // op 89 with an empty body: required clientName missing
    };
    for (byte[] bytes : hostile) {
      try (RawPeer p = new RawPeer(socket())) {
        p.writeRaw(bytes);
        assertTrue(p.closedByPeer(), "not closed after " + java.util.Arrays.toString(bytes));
      }
    }
    // Truncated frames then an early close by the client.
    for (byte[] bytes :
        new byte[][] {
          {0x00}, {0x00, 0x1C, 0x57}, {0x00, 0x1C, 0x57, (byte) 0x85}, {0, 0x1C, 0x57, 9, 1}
        }) {
      try (RawPeer p = new RawPeer(socket())) {
        p.writeRaw(bytes);
      }
    }
    Map<String, Long> c = plugin().counters();
    assertTrue(c.get("rejections.bad_version") >= 1, c.toString());
    assertTrue(c.get("rejections.unknown_op") >= 1, c.toString());
    assertTrue(c.get("rejections.bad_varint") >= 1, c.toString());
    assertTrue(c.get("rejections.oversized") >= 1, c.toString());
    assertTrue(c.get("rejections.bad_protobuf") >= 2, c.toString());
    assertStillServes();
  }

  @Test
  void aFloodOfConnectionsIsBoundedPerClientAndLeavesNothingBehind() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    assertStillServes(); // warm the stock client's caches before the baseline
    ResourceSnapshot baseline = ResourceSnapshot.take();
    long connectionsBefore = plugin().counters().get("live.connections");
    int flood = MAX_CONNECTIONS * 3;
    List<RawPeer> peers = new ArrayList<>();
    int invalid = 0;
    int limited = 0;
    try {
      for (int i = 0; i < flood; i++) {
        peers.add(new RawPeer(socket()));
      }
      SlotId nowhere = new SlotId(new ShortCircuitShm.ShmId(3, 4), 0);
      for (RawPeer p : peers) {
        p.sender.releaseShortCircuitFds(nowhere);
      }
      for (RawPeer p : peers) {
        ReleaseShortCircuitAccessResponseProto r = p.readReleaseResponse();
        if (r.getStatus() == Status.ERROR_INVALID) {
          invalid++;
        } else {
          assertEquals(Status.ERROR, r.getStatus(), r.toString());
          assertTrue(
              r.getError().contains(ScrShimKeys.CLIENT_MAX_CONNECTIONS.name()), r.getError());
          limited++;
        }
      }
    } finally {
      for (RawPeer p : peers) {
        p.close();
      }
    }
    assertTrue(invalid > 0 && invalid <= MAX_CONNECTIONS, "served " + invalid);
    assertTrue(limited >= flood - MAX_CONNECTIONS, "limited " + limited);
    await(
        "connections back to baseline",
        () -> {
          try {
            return plugin().counters().get("live.connections") <= connectionsBefore;
          } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
          }
        });
    List<String> leaks = baseline.leakedSince(Duration.ofSeconds(10));
    assertTrue(leaks.isEmpty(), "leaked after the flood: " + leaks);
    assertStillServes();
  }

  @Test
  @SuppressWarnings("deprecation")
  void deletingAFileInvalidatesItsSlotsWithinTheBound() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    String path = "/modec/to-delete";
    byte[] data = dfs().writeRandomFile(path, 20_000, 5);
    long[] sc = new long[1];
    DistributedFileSystem fs = dfs().fileSystem();
    assertArrayEquals(data, readAll(fs, path, data.length, sc));
    assertEquals(data.length, sc[0]);
    ExtendedBlock blk = fs.getClient().getLocatedBlocks(path, 0).get(0).getBlock();
    SegmentRegistry.BlockKey key =
        new SegmentRegistry.BlockKey(blk.getBlockPoolId(), blk.getBlockId());
    List<SegmentRegistry.SlotRef> slots = plugin().registry().watched(key);
    assertTrue(!slots.isEmpty(), "the stock client registered a slot for the block");
    for (SegmentRegistry.SlotRef ref : slots) {
      assertTrue(ref.segment.segment.slot(ref.index).isValid());
    }

    fs.delete(new Path(path), false);
    FsDatasetSpi<?> ds = dfs().cluster().getDataNodes().get(0).getFSDataset();
    DataNodeTestUtils.triggerHeartbeat(dfs().cluster().getDataNodes().get(0));
    await(
        "the DataNode removed the replica",
        () -> ds.getReplica(blk.getBlockPoolId(), blk.getBlockId()) == null);
    long gone = System.nanoTime();
    await(
        "slots invalidated",
        () -> slots.stream().noneMatch(r -> r.segment.segment.slot(r.index).isValid()));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - gone);
    // Bound: one interval plus one scan; generous slack for a loaded 2-core test machine.
    assertTrue(tookMs <= 10 * INVALIDATION_MS + 1000, "invalidation took " + tookMs + " ms");
    assertTrue(plugin().counters().get("slots_invalidated") >= slots.size());
    assertTrue(plugin().registry().watched(key).isEmpty());
  }

  /** Runs {@link ForeignClientMain} in a child JVM (another pid) and returns its STATUS/MESSAGE. */
  static Map<String, String> foreignClient(String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
    cmd.add("-Xmx64m");
    cmd.add(ForeignClientMain.class.getName());
    cmd.addAll(List.of(args));
    Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out;
    try (InputStream in = child.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      if (!child.waitFor(60, TimeUnit.SECONDS)) {
        child.destroyForcibly();
        throw new AssertionError("child client did not finish: " + cmd);
      }
    }
    assertEquals(0, child.exitValue(), out);
    assertTrue(child.pid() != PID);
    Map<String, String> answer = new HashMap<>();
    for (String line : out.split("\n")) {
      if (line.startsWith("STATUS ")) {
        answer.put("status", line.substring(7));
      } else if (line.startsWith("MESSAGE ")) {
        answer.put("message", line.substring(8));
      }
    }
    assertNotNull(answer.get("status"), out);
    return answer;
  }

  @Test
  void anotherProcessCannotReleaseOrRegisterSlotsInThisProcessesSegment() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    LocatedBlock lb = firstBlock("/modec/owned", 6000, 21);
    ExtendedBlock blk = lb.getBlock();
    SegmentRegistry registry = plugin().registry();
    try (RawPeer shmPeer = new RawPeer(socket());
        RawPeer owner = new RawPeer(socket())) {
      shmPeer.sender.requestShortCircuitShm("owner");
      ShortCircuitShmResponseProto resp = shmPeer.readShmResponse();
      assertEquals(Status.SUCCESS, resp.getStatus());
      FileInputStream[] shmFd = new FileInputStream[1];
      shmPeer.receiveFds(shmFd);
      ShmId id = ShmId.of(resp.getId().getHi(), resp.getId().getLo());
      try (Segment seg = Segment.map(id, shmFd[0].getFD(), 8192)) {
        shmFd[0].close();
        SegmentRegistry.ShimSegment shimSeg = registry.find(id, PID);
        ShortCircuitShm.ShmId stockId = new ShortCircuitShm.ShmId(id.hi(), id.lo());
        // The owner registers slot 0 (fds, receipt) and marks slot 1 valid without using it.
        seg.slot(0).makeValid();
        seg.slot(1).makeValid();
        SlotId slot0 = new SlotId(stockId, 0);
        owner.sender.requestShortCircuitFds(blk, lb.getBlockToken(), slot0, 1, true);
        assertEquals(Status.SUCCESS, owner.readBlockOpResponse().getStatus());
        FileInputStream[] fds = new FileInputStream[2];
        owner.receiveFds(fds);
        RawPeer.closeAll(fds);
        owner.socket.getOutputStream().write(0);
        await("slot 0 registered", () -> shimSeg.ref(0) != null);

        String hi = Long.toString(id.hi());
        String lo = Long.toString(id.lo());
        String stockError = SegmentRegistry.noSuchSegment(id);
        Map<String, String> release = foreignClient("release", socket(), hi, lo, "0");
        assertEquals("ERROR_INVALID", release.get("status"));
        assertEquals(stockError, release.get("message"));
        Map<String, String> register =
            foreignClient(
                "register",
                socket(),
                hi,
                lo,
                "1",
                blk.getBlockPoolId(),
                Long.toString(blk.getBlockId()),
                Long.toString(blk.getGenerationStamp()),
                Long.toString(blk.getNumBytes()),
                lb.getBlockToken().encodeToUrlString());
        assertEquals("ERROR", register.get("status"));
        assertEquals(stockError, register.get("message"));

        // The owner's slots are untouched: slot 0 registered and valid, slot 1 still free.
        assertNotNull(shimSeg.ref(0));
        assertTrue(seg.slot(0).isValid());
        assertNull(shimSeg.ref(1));
        assertTrue(seg.slot(1).isValid());
        assertTrue(
            plugin()
                    .registry()
                    .watched(new SegmentRegistry.BlockKey(blk.getBlockPoolId(), blk.getBlockId()))
                    .size()
                == 1);
        // And the owner can still release its own slot.
        owner.sender.releaseShortCircuitFds(slot0);
        assertEquals(Status.SUCCESS, owner.readReleaseResponse().getStatus());
        assertNull(shimSeg.ref(0));
      }
    }
  }

  static byte[] extensionFrame(int subOp, MessageLite... messages) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(subOp);
    for (MessageLite m : messages) {
      m.writeDelimitedTo(body);
    }
    ByteArrayOutputStream frame = new ByteArrayOutputStream();
    frame.write(new byte[] {0x00, 0x1C, 0x7F});
    CodedOutputStream cos = CodedOutputStream.newInstance(frame);
    cos.writeUInt32NoTag(body.size());
    cos.flush();
    body.writeTo(frame);
    return frame.toByteArray();
  }

  @Test
  void extensionsBatchFdRequestsAndReleasesWhenAskedFor() throws Exception {
    assertTrue(plugin().awaitServing(30_000));
    LocatedBlock a = firstBlock("/modec/ext-a", 3000, 11);
    LocatedBlock b = firstBlock("/modec/ext-b", 5000, 12);
    try (RawPeer p = new RawPeer(socket())) {
      p.writeRaw(extensionFrame(ShortCircuitService.EXT_HELLO));
      BlockOpResponseProto hello = p.readBlockOpResponse();
      assertEquals(Status.SUCCESS, hello.getStatus());
      assertEquals(ShortCircuitService.EXT_ADVERTISEMENT, hello.getMessage());

      OpRequestShortCircuitAccessProto.Builder req =
          OpRequestShortCircuitAccessProto.newBuilder().setMaxVersion(1);
      OpRequestShortCircuitAccessProto ra =
          req.clone()
              .setHeader(header(a.getBlock(), a.getBlockToken()))
              .setSupportsReceiptVerification(true)
              .build();
      ExtendedBlock missing = new ExtendedBlock(b.getBlock());
      missing.setGenerationStamp(missing.getGenerationStamp() + 1);
      OpRequestShortCircuitAccessProto rm =
          req.clone().setHeader(header(missing, tokenFor(missing, 600_000))).build();
      OpRequestShortCircuitAccessProto rb =
          req.clone().setHeader(header(b.getBlock(), b.getBlockToken())).build();
      p.writeRaw(extensionFrame(ShortCircuitService.EXT_BATCH_FDS, ra, rm, rb));
      assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
      assertEquals(Status.ERROR, p.readBlockOpResponse().getStatus());
      assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
      FileInputStream[] fds = new FileInputStream[4];
      assertEquals(1, p.receiveFds(fds), "one message, receipt requested by one item");
      try {
        assertEquals(3000, fds[0].getChannel().size());
        assertEquals(5000, fds[2].getChannel().size());
        assertNotNull(fds[1]);
        assertNotNull(fds[3]);
      } finally {
        RawPeer.closeAll(fds);
      }
      p.socket.getOutputStream().write(0);

      ShortCircuitShmSlotProto nowhere =
          ShortCircuitShmSlotProto.newBuilder()
              .setShmId(ShortCircuitShmIdProto.newBuilder().setHi(5).setLo(6))
              .setSlotIdx(1)
              .build();
      ReleaseShortCircuitAccessRequestProto rel =
          ReleaseShortCircuitAccessRequestProto.newBuilder().setSlotId(nowhere).build();
      p.writeRaw(extensionFrame(ShortCircuitService.EXT_BATCH_RELEASE, rel, rel));
      assertEquals(Status.ERROR_INVALID, p.readReleaseResponse().getStatus());
      assertEquals(Status.ERROR_INVALID, p.readReleaseResponse().getStatus());
    }
    assertTrue(plugin().counters().get("requests.ext_batch_fds.success") >= 1);
  }

  static BaseHeaderProto header(ExtendedBlock blk, Token<BlockTokenIdentifier> token) {
    return BaseHeaderProto.newBuilder()
        .setBlock(PBHelperClient.convert(blk))
        .setToken(PBHelperClient.convert(token))
        .build();
  }
}
