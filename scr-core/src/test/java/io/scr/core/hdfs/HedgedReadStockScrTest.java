package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClientFaultInjector;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HedgedReadCounts;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hedged reads ({@code dfs.client.hedged.read.*}) with {@link ScrFileSystem}, mode A, two DataNodes
 * on this host, replication 2, every stock fetch from a DataNode slowed past the hedge threshold
 * (stock's own fault injector): local blocks are read short-circuit and never hedged (a local read
 * has no slow peer to hedge against), and blocks scr cannot serve go the stock way and are hedged
 * exactly as the stock client hedges them.
 */
class HedgedReadStockScrTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK;

  static {
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(2)
          .blockSize(BLOCK)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(c -> c.setInt("dfs.replication", 2))
          .buildExtension();

  /** Each fetch from a DataNode takes 50 ms longer than the 1 ms hedge threshold. */
  private static final class SlowFetch extends DFSClientFaultInjector {
    @Override
    public void startFetchFromDatanode() {
      try {
        Thread.sleep(50); // stock's hook has no latch; the hedge starts on a timer
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private DFSClientFaultInjector previous;

  @BeforeEach
  void slowDataNodeFetches() {
    previous = DFSClientFaultInjector.get();
    DFSClientFaultInjector.set(new SlowFetch());
  }

  @AfterEach
  void restoreFetches() {
    DFSClientFaultInjector.set(previous);
  }

  private static FileSystem fileSystem(boolean scr, Consumer<Configuration> more) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              if (scr) {
                c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              }
              c.setBoolean("fs.hdfs.impl.disable.cache", true);
              c.setBoolean("dfs.client.read.shortcircuit", false); // stock reads over TCP
              c.setInt("dfs.client.hedged.read.threadpool.size", 4);
              c.setLong("dfs.client.hedged.read.threshold.millis", 1);
              c.set("scr.client.context", "hedged-" + scr + "-" + System.nanoTime());
              c.setInt("scr.metrics.summary.interval.seconds", 0);
              more.accept(c);
            });
  }

  /** Hedged reads this file system's client started (stock counts them process-wide). */
  private static long hedgedReads(FileSystem fs) {
    return HedgedReadCounts.started(((DistributedFileSystem) fs).getClient());
  }

  /** Reads the file by one positional read; returns the short-circuit bytes counted. */
  private static long pread(FileSystem fs, String file, byte[] expect) throws IOException {
    byte[] all = new byte[LEN];
    try (FSDataInputStream in = fs.open(new Path(file))) {
      in.readFully(0, all);
      assertArrayEquals(expect, all);
      return ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
    }
  }

  @Test
  void localBlocksAreReadShortCircuitAndNeverHedged() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/hedged/local", LEN, 71);
    try (FileSystem fs = fileSystem(true, c -> {})) {
      long before = hedgedReads(fs);
      assertEquals(LEN, pread(fs, "/hedged/local", expect), "every byte short-circuit");
      assertEquals(before, hedgedReads(fs), "no hedged read started");
    }
  }

  @Test
  void blocksScrCannotServeAreHedgedAsStockHedgesThem() throws Exception {
    byte[] expect = DFS.dfs().writeRandomFile("/hedged/stock", LEN, 73);
    String noSocket = DFS.dfs().socketDir().resolve("absent._PORT.sock").toString();
    try (FileSystem stock = fileSystem(false, c -> {});
        FileSystem fs = fileSystem(true, c -> c.set("scr.client.socket.paths", noSocket))) {
      long before = hedgedReads(stock);
      assertEquals(0, pread(stock, "/hedged/stock", expect));
      long stockHedges = hedgedReads(stock) - before;
      assertTrue(stockHedges > 0, "the stock client hedged: " + stockHedges);

      before = hedgedReads(fs);
      assertEquals(0, pread(fs, "/hedged/stock", expect), "no local socket: every byte stock");
      long scrHedges = hedgedReads(fs) - before;
      assertTrue(scrHedges > 0, "ScrFileSystem's stock reads hedged as stock's: " + scrHedges);
    }
  }
}
