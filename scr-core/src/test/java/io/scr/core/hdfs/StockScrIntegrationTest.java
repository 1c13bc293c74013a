package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.ResourceSnapshot;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.ExtendedBlockId;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockManagerTestUtil;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.ShortCircuitRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A: scr client against a stock DataNode with libhadoop. Reads through {@link Engine} directly
 * and through the replica accessor of a stock {@link DistributedFileSystem}, compared byte for byte
 * with the written data.
 */
class StockScrIntegrationTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK + 300_123; // three blocks, the last partial

  static {
    // JVM-wide singletons (static Cleaner threads of scr-shm and junixsocket, native probes) are
    // created before the extension takes its baseline, so they do not count as leaks.
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static byte[] data;

  @BeforeAll
  static void write() throws Exception {
    data = DFS.dfs().writeRandomFile("/a", LEN, 42);
  }

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static List<LocatedBlock> blocks(DistributedFileSystem fs) throws Exception {
    return fs.getClient().getLocatedBlocks("/a", 0, LEN).getLocatedBlocks();
  }

  private static Configuration scrConf(String context) {
    Configuration c = DFS.dfs().clientConf();
    c.set("scr.client.context", context);
    return c;
  }

  @Test
  void leasesReadByteIdenticalAtRandomOffsetsAcrossChunksAndBlocks() throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    ResourceSnapshot before = ResourceSnapshot.take();
    Engine client = Engine.acquire(scrConf("lease-test"));
    try {
      Random rnd = new Random(7);
      List<LocatedBlock> blocks = blocks(fs);
      assertEquals(3, blocks.size());
      int reads = 0;
      for (LocatedBlock lb : blocks) {
        String path = client.socketPathFor(lb.getLocations()[0]);
        assertEquals(DFS.dfs().socketPath(0), path);
        long blockStart = lb.getStartOffset();
        for (int i = 0; i < 120; i++) {
          try (ReplicaLease lease =
              client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null)) {
            assertNotNull(lease, "lease of " + lb.getBlock());
            assertEquals(lb.getBlockSize(), lease.length());
            long off = pickOffset(rnd, lease.length());
            int len = 1 + rnd.nextInt(i % 3 == 0 ? 200_000 : 5000);
            boolean verify = rnd.nextBoolean();
            int mode = rnd.nextInt(3);
            byte[] got = readFully(lease, off, len, verify, mode);
            int expectLen = (int) Math.min(len, lease.length() - off);
            byte[] expect =
                Arrays.copyOfRange(
                    data, (int) (blockStart + off), (int) (blockStart + off) + expectLen);
            assertArrayEquals(
                expect, got, "block " + lb.getBlock() + " off " + off + " len " + len);
            reads++;
          }
        }
        try (ReplicaLease lease =
            client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null)) {
          assertEquals(-1, lease.read(lease.length(), ByteBuffer.allocate(10), true));
        }
      }
      assertEquals(360, reads);
      assertEquals(3, client.cacheStats().missCount(), "one open per block, then cache hits");
    } finally {
      client.close();
    }
    List<String> leaks = JvmSingletons.withoutFdListing(before.leakedSince(Duration.ofSeconds(10)));
    assertTrue(leaks.isEmpty(), "Engine.close() left " + leaks);
  }

  private static long pickOffset(Random rnd, long length) {
    switch (rnd.nextInt(4)) {
      case 0:
        return (rnd.nextInt((int) (length / 512)) * 512L); // chunk-aligned
      case 1:
        return Math.max(0, length - 1 - rnd.nextInt(1500)); // near the end
      default:
        return rnd.nextInt((int) length);
    }
  }

  private static byte[] readFully(ReplicaLease lease, long off, int len, boolean verify, int mode)
      throws Exception {
    int want = (int) Math.min(len, lease.length() - off);
    byte[] out = new byte[want];
    int done = 0;
    ByteBuffer direct = mode == 1 ? ByteBuffer.allocateDirect(want) : null;
    ByteBuffer heap = mode == 2 ? ByteBuffer.allocate(want + 10).position(5).limit(5 + want) : null;
    while (done < want) {
      int n;
      if (mode == 0) {
        n = lease.read(off + done, out, done, want - done, verify);
      } else if (mode == 1) {
        n = lease.read(off + done, direct, verify);
      } else {
        n = lease.read(off + done, heap, verify);
      }
      assertTrue(n > 0, "read returned " + n);
      done += n;
    }
    if (mode == 1) {
      direct.flip();
      direct.get(out);
    } else if (mode == 2) {
      heap.position(5);
      heap.get(out);
    }
    return out;
  }

  @Test
  void stockFileSystemReadsShortCircuitThroughTheAccessor() throws Exception {
    DistributedFileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.set("scr.client.context", "accessor-test");
                });
    Random rnd = new Random(11);
    try (FSDataInputStream in = fs.open(new Path("/a"))) {
      for (int i = 0; i < 60; i++) {
        int off = rnd.nextInt(LEN);
        int len = Math.min(LEN - off, 1 + rnd.nextInt(300_000));
        byte[] buf = new byte[len];
        in.readFully(off, buf);
        assertArrayEquals(Arrays.copyOfRange(data, off, off + len), buf, "pread " + off);
      }
      byte[] all = new byte[LEN];
      in.seek(0);
      in.readFully(all);
      assertArrayEquals(data, all);
      long sc = ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
      assertTrue(sc >= LEN, "short-circuit bytes: " + sc);
    }
  }

  @Test
  void missingSocketFallsBackToTheStockPath() throws Exception {
    Configuration conf = scrConf("missing-socket");
    conf.set(
        "scr.client.socket.paths", DFS.dfs().socketDir().resolve("nobody._PORT.sock").toString());
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    LocatedBlock lb = blocks(fs).get(0);
    Engine client = Engine.acquire(conf);
    try {
      String path = client.socketPathFor(lb.getLocations()[0]);
      assertNotNull(path, "first attempt is not backing off yet");
      assertNull(client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null));
      assertEquals(1, client.fallbackCount(FallbackReason.CONNECT_FAILED));
      assertNull(client.socketPathFor(lb.getLocations()[0]), "now backing off");
      assertEquals(1, client.fallbackCount(FallbackReason.BACKING_OFF));
      assertTrue(
          client.backoffStatus().stream()
              .anyMatch(s -> s.failures() == 1 && s.lastReason().contains("nobody")),
          client.backoffStatus().toString());
    } finally {
      client.close();
    }
    // The stock path, with the accessor configured against the missing socket, still reads.
    DistributedFileSystem accessorFs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.set("scr.client.context", "missing-socket-fs");
                  c.set(
                      "scr.client.socket.paths",
                      DFS.dfs().socketDir().resolve("nobody.sock").toString());
                });
    try (FSDataInputStream in = accessorFs.open(new Path("/a"))) {
      byte[] buf = new byte[100_000];
      in.readFully(BLOCK - 50_000, buf);
      assertArrayEquals(Arrays.copyOfRange(data, BLOCK - 50_000, BLOCK + 50_000), buf);
      assertEquals(
          0, ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
    }
  }

  @Test
  void aReusedLeaseIsOneObjectWithTheLeaseContractForEachRead() throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    List<LocatedBlock> blocks = blocks(fs);
    Engine client = Engine.acquire(scrConf("reuse-test"));
    Engine other = Engine.acquire(scrConf("reuse-test-other"));
    try {
      String path = client.socketPathFor(blocks.get(0).getLocations()[0]);
      ReplicaLease spare =
          client.lease(blocks.get(0).getBlock(), blocks.get(0).getBlockToken(), path, null, null);
      assertNotNull(spare);
      spare.close();
      spare.close(); // idempotent
      assertThrows(IllegalStateException.class, spare::length, "a closed lease is unusable");
      assertThrows(IllegalStateException.class, () -> spare.read(0, new byte[1], 0, 1, true));
      for (LocatedBlock lb : blocks) { // open every replica once: from here on, all hits
        client.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", spare).close();
      }
      long missesBefore = client.cacheStats().missCount();
      long hitsBefore = client.cacheStats().hitCount();
      Random rnd = new Random(3);
      for (int i = 0; i < 90; i++) {
        LocatedBlock lb = blocks.get(i % blocks.size());
        ReplicaLease lease = client.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", spare);
        assertSame(spare, lease, "the spare is reopened, not replaced");
        try {
          long off = pickOffset(rnd, lease.length());
          byte[] got = readFully(lease, off, 1 + rnd.nextInt(9000), rnd.nextBoolean(), i % 3);
          int start = (int) (lb.getStartOffset() + off);
          assertArrayEquals(Arrays.copyOfRange(data, start, start + got.length), got);
          assertThrows(
              IllegalStateException.class,
              () -> client.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", lease),
              "an open lease cannot be reopened");
        } finally {
          lease.close();
        }
        assertThrows(IllegalStateException.class, lease::length);
      }
      assertEquals(missesBefore, client.cacheStats().missCount(), "every reuse was a hit");
      assertEquals(hitsBefore + 90, client.cacheStats().hitCount());
      LocatedBlock lb = blocks.get(0);
      assertThrows(
          IllegalArgumentException.class,
          () -> other.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", spare),
          "a lease is only reopened by the engine that made it");
    } finally {
      other.close();
      client.close();
    }
  }

  @Test
  void slotsComeFromTheStockDataNodeAndADeletedReplicaIsNeverServedAgain() throws Exception {
    String file = "/stale";
    byte[] bytes = DFS.dfs().writeRandomFile(file, 200_000, 5);
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    LocatedBlock lb = fs.getClient().getLocatedBlocks(file, 0, 200_000).getLocatedBlocks().get(0);
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(0);
    ShortCircuitRegistry registry = dn.getShortCircuitRegistry();
    ExtendedBlockId blockId = ExtendedBlockId.fromExtendedBlock(lb.getBlock());
    File blockFile = DFS.dfs().cluster().getBlockFile(0, lb.getBlock());
    assertNotNull(blockFile);
    String context = "stale-test";
    Engine client = Engine.acquire(scrConf(context));
    ReplicaLease held = null;
    try {
      String path = client.socketPathFor(lb.getLocations()[0]);
      held = client.lease(lb.getBlock(), lb.getBlockToken(), path, file, null);
      assertNotNull(held);

      // The slot came from a segment the stock DataNode made for us, and it registered the slot
      // under our client name for this very block.
      SlotPoolStats pool = client.slotPoolStats().get(0);
      assertTrue(pool.segments() > 0, pool.toString());
      assertTrue(pool.slotsInUse() > 0, pool.toString());
      assertTrue(registry.getShmNum() > 0, "DataNode segments");
      String clientName = "scr_" + context + "_" + ProcessHandle.current().pid();
      assertTrue(
          registry.getClientNames(blockId).contains(clientName),
          "DataNode slot holders of " + blockId + ": " + registry.getClientNames(blockId));
      assertTrue(openFdTargets().contains(blockFile.getPath()), "the replica's block fd is open");

      // Delete the file; the DataNode clears VALID on our slot before it deletes the files.
      assertTrue(fs.delete(new Path(file), false));
      awaitTrue(
          "the DataNode invalidated our slot of " + blockId,
          () -> {
            BlockManagerTestUtil.computeAllPendingWork(
                DFS.dfs().cluster().getNamesystem().getBlockManager());
            DFS.dfs().cluster().triggerHeartbeats();
            return !anyValidSlot(registry, blockId);
          });

      // The next lease does not serve the stale replica: it is dropped and the DataNode, which
      // no longer has the block, refuses to reopen it.
      long staleBefore = client.cacheStats().invalidationCount();
      assertNull(client.lease(lb.getBlock(), lb.getBlockToken(), path, file, null));
      assertEquals(1, client.fallbackCount(FallbackReason.BLOCK_REFUSED));
      assertEquals(staleBefore + 1, client.cacheStats().invalidationCount());

      // The lease taken before the deletion still reads (an unlinked file stays readable).
      byte[] got = readFully(held, 1000, 5000, true, 0);
      assertArrayEquals(Arrays.copyOfRange(bytes, 1000, 6000), got);
      held.close();

      // Its last lease gone, the cache's closer closes both fds.
      awaitTrue(
          "the closer closed the deleted replica's fds",
          () -> openFdTargets().stream().noneMatch(t -> t.startsWith(blockFile.getPath())));
    } finally {
      if (held != null) {
        held.close(); // idempotent
      }
      client.close();
    }
  }

  @Test
  void anInterruptedReadersReadCompletesAndTheReplicaStaysCached() throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    LocatedBlock lb = blocks(fs).get(1);
    Engine client = Engine.acquire(scrConf("interrupt-test"));
    try {
      String path = client.socketPathFor(lb.getLocations()[0]);
      int start = (int) lb.getStartOffset();
      byte[] got = new byte[100];
      ReplicaLease lease = client.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", null);
      long misses = client.cacheStats().missCount();
      boolean stillInterrupted;
      Thread.currentThread().interrupt();
      try {
        // An interruptible FileChannel would close the replica's channel for every lease here.
        assertEquals(100, lease.read(0, got, 0, 100, false));
      } finally {
        stillInterrupted = Thread.interrupted();
        lease.close();
      }
      assertArrayEquals(Arrays.copyOfRange(data, start, start + 100), got);
      assertTrue(stillInterrupted, "the reader keeps its interrupt status for its next call");
      try (ReplicaLease again = client.lease(lb.getBlock(), lb.getBlockToken(), path, "/a", null)) {
        assertNotNull(again);
        byte[] more = readFully(again, 10, 4096, true, 0);
        assertArrayEquals(Arrays.copyOfRange(data, start + 10, start + 10 + 4096), more);
      }
      assertEquals(misses, client.cacheStats().missCount(), "the same replica, not reopened");
    } finally {
      client.close();
    }
  }

  /**
   * A new engine's first read fetches the slot pool's first segment on the reader's thread (as
   * stock does). A reader already interrupted then meets its interrupt there (the channel that
   * sizes the segment is interruptible): its read still completes, its interrupt status stays set,
   * and shared memory stays on for everyone else (no SHM backoff, no fetch failure counted; the
   * refill thread fetches the segment).
   */
  @Test
  void aReaderInterruptedAtANewEnginesFirstReadLeavesSharedMemoryOn() throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    List<LocatedBlock> blocks = blocks(fs);
    Engine client = Engine.acquire(scrConf("first-read-interrupt-test"));
    try {
      LocatedBlock first = blocks.get(0);
      String path = client.socketPathFor(first.getLocations()[0]);
      byte[] got;
      boolean stillInterrupted;
      Thread.currentThread().interrupt();
      try (ReplicaLease lease =
          client.lease(first.getBlock(), first.getBlockToken(), path, "/a", null)) {
        assertNotNull(lease, "the interrupted reader's read is short-circuit");
        got = readFully(lease, 0, 4096, true, 0);
      } finally {
        stillInterrupted = Thread.interrupted();
      }
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4096), got);
      assertTrue(stillInterrupted, "the reader keeps its interrupt status for its next call");

      for (io.scr.core.stats.BackoffStatus s : client.backoffStatus()) {
        assertEquals(0, s.failures(), "no failure recorded for the reader's interrupt: " + s);
      }
      LocatedBlock second = blocks.get(1);
      int inUse = client.slotPoolStats().get(0).slotsInUse();
      try (ReplicaLease lease =
          client.lease(second.getBlock(), second.getBlockToken(), path, "/a", null)) {
        assertNotNull(lease);
      }
      io.scr.shm.SlotPoolStats pool = client.slotPoolStats().get(0);
      assertEquals(inUse + 1, pool.slotsInUse(), "the next replica has a slot: " + pool);
      assertEquals(0, pool.segmentFetchFailures(), pool.toString());
      assertTrue(pool.segmentFetches() >= 1, pool.toString());
    } finally {
      client.close();
    }
  }

  private static boolean anyValidSlot(ShortCircuitRegistry registry, ExtendedBlockId block) {
    AtomicBoolean valid = new AtomicBoolean();
    registry.visit(
        (segments, slots) -> {
          slots.get(block).forEach(s -> valid.compareAndSet(false, s.isValid()));
          return true;
        });
    return valid.get();
  }

  /** Where this process's fds point ({@code /proc/self/fd}). */
  private static List<String> openFdTargets() {
    List<String> out = new ArrayList<>();
    File[] fds = new File("/proc/self/fd").listFiles();
    if (fds != null) {
      for (File fd : fds) {
        try {
          out.add(Files.readSymbolicLink(fd.toPath()).toString());
        } catch (IOException e) {
          // closed meanwhile (e.g. the listing's own fd)
        }
      }
    }
    return out;
  }

  /** Waits up to 60 s for something another process or thread does, with no hook to wait on. */
  private static void awaitTrue(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting until " + what);
      }
      Thread.sleep(50);
    }
  }

  private interface Condition {
    boolean holds() throws Exception;
  }
}
