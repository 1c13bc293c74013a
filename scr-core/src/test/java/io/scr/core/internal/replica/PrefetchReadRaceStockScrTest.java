package io.scr.core.internal.replica;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ReplicaLease;
import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.engine.SeamedEngines;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.lang.reflect.Field;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Prefetch on open racing a read, against a real stock DataNode (mode A): a prefetch and a read of
 * one replica share one fd request, also when the DataNode refuses it. The race the production-
 * events suite saw with prefetch on by default (5 fd requests for 4 remote blocks): the read
 * consulted the absent-replica memory, the prefetch's request was refused and remembered, then the
 * read asked the same DataNode again. Held deterministically here with the reader's test hook
 * between its memory check and its load.
 */
class PrefetchReadRaceStockScrTest {
  static {
    io.scr.core.hdfs.JvmSingletonsAccess.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(1)
          .blockSize(1 << 20)
          .mode(DataNodeMode.STOCK_SCR)
          .buildExtension();

  /** Fd requests the DataNode has seen, refused ones included ({@code BlocksGetLocalPathInfo}). */
  private static long fdRequests() throws ReflectiveOperationException {
    DataNodeMetrics m = DFS.dfs().cluster().getDataNodes().get(0).getMetrics();
    Field f = DataNodeMetrics.class.getDeclaredField("blocksGetLocalPathInfo");
    f.setAccessible(true);
    return ((MutableCounterLong) f.get(m)).value();
  }

  private static ScrFileSystem fileSystem(String context) {
    return (ScrFileSystem)
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set("scr.client.context", context);
                  c.setInt("scr.client.prefetch.max-blocks", 0); // the test is the prefetch
                });
  }

  @Test
  void aPrefetchRefusedWhileAReadWasAboutToLoadCostsTheDataNodeOneRequest() throws Exception {
    MiniDfs dfs = DFS.dfs();
    dfs.writeRandomFile("/race/refused", 4096, 21);
    LocatedBlock lb =
        dfs.fileSystem().getClient().getLocatedBlocks("/race/refused", 0).getLocatedBlocks().get(0);
    // A generation stamp the DataNode does not hold: refused as "No data exists for block".
    ExtendedBlock absent = new ExtendedBlock(lb.getBlock());
    absent.setGenerationStamp(absent.getGenerationStamp() + 1);
    String path = dfs.socketPath(0);
    Configuration conf = DFS.dfs().clientConf();
    conf.set("scr.client.context", "race-refused");
    conf.setInt("scr.client.prefetch.max-blocks", 0); // the test is the prefetch
    CountDownLatch readerChecked = new CountDownLatch(1);
    AtomicReference<AbsentReplicas> memoryOf = new AtomicReference<>();
    AtomicLong rememberedBefore = new AtomicLong();
    try (Engine scr =
        SeamedEngines.acquire(
            conf,
            SeamedEngines.afterMissChecked(
                b -> {
                  if (!"race-reader".equals(Thread.currentThread().getName())) {
                    return;
                  }
                  readerChecked.countDown();
                  // Hold the read until the prefetch's refusal is remembered (it found nothing
                  // first).
                  AbsentReplicas memory = memoryOf.get();
                  long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                  while (memory.rememberedCount() == rememberedBefore.get()
                      && System.nanoTime() < deadline) {
                    java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                  }
                }))) {
      AbsentReplicas memory = scr.absentReplicas();
      memoryOf.set(memory);
      rememberedBefore.set(memory.rememberedCount());
      raceARefusedPrefetchWithARead(scr, memory, lb, absent, path, readerChecked);
    }
  }

  private static void raceARefusedPrefetchWithARead(
      Engine scr,
      AbsentReplicas memory,
      LocatedBlock lb,
      ExtendedBlock absent,
      String path,
      CountDownLatch readerChecked)
      throws Exception {
    long before = fdRequests();
    AtomicReference<Object> readResult = new AtomicReference<>();
    Thread reader =
        new Thread(
            () -> {
              try {
                ReplicaLease lease =
                    scr.lease(absent, lb.getBlockToken(), path, "/race/refused", null);
                readResult.set(lease == null ? "no lease" : lease);
              } catch (Throwable t) {
                readResult.set(t);
              }
            },
            "race-reader");
    reader.start();
    assertTrue(readerChecked.await(60, TimeUnit.SECONDS), "the read reached its load");
    PrefetchResult prefetched = scr.prefetch(absent, lb.getBlockToken(), path, "/race/refused");
    reader.join(60_000);
    assertFalse(reader.isAlive(), "the read finished");
    assertEquals(PrefetchResult.NOT_OPENED, prefetched);
    assertEquals("no lease", readResult.get(), "the read falls back");
    assertEquals(
        1,
        fdRequests() - before,
        "the prefetch and the read asked the DataNode once between them ("
            + memory.rememberedCount()
            + " refusals remembered, "
            + memory.avoidedCount()
            + " requests avoided)");
    assertNull(scr.leaseIfCached(absent, "/race/refused"));
  }

  @Test
  void theSlotOfARefusedRequestIsNotHandedOutAgainAtOnce() throws Exception {
    MiniDfs dfs = DFS.dfs();
    dfs.writeRandomFile("/race/slots", 2 << 20, 22);
    java.util.List<LocatedBlock> blocks =
        dfs.fileSystem().getClient().getLocatedBlocks("/race/slots", 0).getLocatedBlocks();
    ExtendedBlock absent = new ExtendedBlock(blocks.get(0).getBlock());
    absent.setGenerationStamp(absent.getGenerationStamp() + 1);
    String path = dfs.socketPath(0);
    Engine scr = Engine.running(fileSystem("race-slots").getConf());
    try (ReplicaLease a =
        scr.lease(blocks.get(0).getBlock(), blocks.get(0).getBlockToken(), path, null, null)) {
      io.scr.shm.SlotId first = ((LeasedReplica) a).value().slot().id();
      // The refused request carries the lowest free slot (allocation is first-fit): the one after
      // the first replica's. The stock DataNode clears that slot's VALID flag only after its
      // answer; handed out again at once, the next request would carry a slot the DataNode may
      // find invalid.
      assertNull(scr.lease(absent, blocks.get(0).getBlockToken(), path, null, null), "refused");
      io.scr.shm.SlotId refused = io.scr.shm.SlotId.of(first.shmId(), first.index() + 1);
      try (ReplicaLease b =
          scr.lease(blocks.get(1).getBlock(), blocks.get(1).getBlockToken(), path, null, null)) {
        io.scr.shm.SlotId next = ((LeasedReplica) b).value().slot().id();
        assertTrue(
            !next.equals(refused),
            "the refused request's slot " + refused + " was handed out again at once");
      }
    }
  }
}
