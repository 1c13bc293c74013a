package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B: prefetch on open asks the scr shim for all of a file's blocks in one op-127 BATCH_FDS
 * exchange, counted by the shim itself, and the replicas it opened serve the first reads.
 */
class ShimPrefetchBatchTest {
  static final int BLOCK = 64 * 1024;
  static final int BLOCKS = 12;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  /** The shim's count of requests of one kind ({@code request_fds}, {@code ext_batch_fds}). */
  private static long shimRequests(String kind) {
    long n = 0;
    for (Map.Entry<String, Long> e : Faults.shim(DFS.dfs(), 0).counters().entrySet()) {
      if (e.getKey().startsWith("requests." + kind + ".")) {
        n += e.getValue();
      }
    }
    return n;
  }

  @Test
  void aFilesBlocksArePrefetchedInOneBatchedExchange() throws Exception {
    MiniDfs dfs = DFS.dfs();
    byte[] data = dfs.writeRandomFile("/batch/file", BLOCKS * BLOCK, 31);
    ScrFileSystem fs =
        Faults.scrFileSystem(
            dfs,
            c -> {
              c.setInt("scr.client.prefetch.max-blocks", 16);
              c.setLong("dfs.client.read.prefetch.size", (long) BLOCKS * BLOCK);
            });
    Engine scr = Engine.running(fs.getConf());
    try {
      // The prefetch uses what the engine knows of the peer (it never probes: a stock DataNode
      // would close the probe's connection); an engine learns it with its first slot release.
      assertTrue(scr.extensions().features(dfs.socketPath(0)).batchFds(), "the shim offers it");
      long op87Before = shimRequests("request_fds");
      long batchesBefore = shimRequests("ext_batch_fds");
      try (FSDataInputStream in = fs.open(new Path("/batch/file"))) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (scr.metricsSnapshot().replicasPrefetched() + scr.metricsSnapshot().prefetchSkipped()
            < BLOCKS) {
          assertTrue(System.nanoTime() < deadline, "prefetch done: " + scr.metricsSnapshot());
          Thread.sleep(5);
        }
        ClientSnapshot s = scr.metricsSnapshot();
        assertEquals(BLOCKS, s.replicasPrefetched(), "every block prefetched");
        assertEquals(1, shimRequests("ext_batch_fds") - batchesBefore, "one batched exchange");
        assertEquals(0, shimRequests("request_fds") - op87Before, "no op 87 for the prefetch");
        byte[] buf = new byte[4096];
        for (int b = 0; b < BLOCKS; b++) {
          long pos = (long) b * BLOCK + 333;
          in.readFully(pos, buf);
          assertArrayEquals(Arrays.copyOfRange(data, (int) pos, (int) pos + buf.length), buf);
        }
        assertEquals(
            (long) BLOCKS * buf.length,
            ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
        assertEquals(BLOCKS, scr.metricsSnapshot().prefetchHits(), "each first read a hit");
        assertEquals(0, shimRequests("request_fds") - op87Before, "the reads asked nothing");
      }
    } finally {
      fs.close();
    }
    // The batch's replicas hold slots of the endpoint's first segment (the batch made the pool).
    // Closing the engine closes them: every slot goes back, the segment is returned and its
    // connection closed, which the shim sees at once, not whenever a collection runs (the first
    // batch's replicas once kept a null pool and gave nothing back).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    Map<String, Long> shim;
    while (true) {
      shim = Faults.shim(dfs, 0).counters();
      if (Faults.counter(shim, "live.segments") == 0 && Faults.counter(shim, "live.slots") == 0
          || System.nanoTime() > deadline) {
        break;
      }
      Thread.sleep(20);
    }
    assertEquals(0, Faults.counter(shim, "live.segments"), "segments left at the shim: " + shim);
    assertEquals(0, Faults.counter(shim, "live.slots"), "slots left at the shim: " + shim);
    for (SlotPoolStats pool : scr.metricsSnapshot().slotPools()) { // keeps the engine reachable
      assertEquals(0, pool.slotsInUse(), "slots the closed engine still holds: " + pool);
    }
  }
}
