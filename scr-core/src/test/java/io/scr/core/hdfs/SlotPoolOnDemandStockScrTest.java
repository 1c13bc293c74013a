package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code scr.client.slot-pool.low-watermark = 0} (keep no slots ready) fetches the first segment on
 * demand. Before, the first fd request waited for a "first segment" that nobody was fetching, for
 * the whole exchange timeout (connect + read timeout: 6 s by default), before it asked the pool at
 * all.
 */
class SlotPoolOnDemandStockScrTest {
  static {
    JvmSingletons.initialize();
  }

  /** Connect and read timeouts: the exchange timeout is their sum, 120 s. */
  private static final int TIMEOUT_MS = 60_000;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(64 * 1024).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @Test
  void theFirstReadDoesNotWaitForASegmentNobodyFetches() throws Exception {
    MiniDfs dfs = DFS.dfs();
    byte[] data = dfs.writeRandomFile("/on-demand", 10_000, 5);
    try (ScrFileSystem fs =
        dfs.newFileSystem(
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              c.set("scr.client.context", "on-demand");
              c.setInt("scr.client.slot-pool.low-watermark", 0);
              c.setInt("scr.net.connect.timeout.ms", TIMEOUT_MS);
              c.setInt("scr.net.read.timeout.ms", TIMEOUT_MS);
              // the allocation itself waits for the on-demand fetch: generous on a loaded box
              c.setInt("scr.client.slot-pool.max-allocation-wait", 10_000);
            })) {
      byte[] got = new byte[data.length];
      long start = System.nanoTime();
      try (FSDataInputStream in = fs.open(new Path("/on-demand"))) {
        in.readFully(0, got);
        assertEquals(
            data.length,
            ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
      }
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertArrayEquals(data, got);
      // Not a speed goal: a liveness bound a thousand times the expected few milliseconds, and
      // far below the exchange timeout the old code waited out.
      assertTrue(tookMs < TIMEOUT_MS / 2, "the first read took " + tookMs + " ms");
      List<SlotPoolStats> pools = fs.engine().slotPoolStats();
      assertEquals(1, pools.size(), pools.toString());
      assertEquals(1, pools.get(0).allocations(), "the replica was opened with a slot: " + pools);
      assertEquals(1, pools.get(0).segmentFetches(), "fetched on demand: " + pools);
    }
  }
}
