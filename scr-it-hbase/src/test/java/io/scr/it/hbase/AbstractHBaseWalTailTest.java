package io.scr.it.hbase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.fs.HFileSystem;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.regionserver.wal.AbstractFSWAL;
import org.apache.hadoop.hbase.replication.BaseReplicationEndpoint;
import org.apache.hadoop.hbase.replication.ReplicationPeerConfig;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.wal.WAL;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * HBase replication tails the RegionServer's live write-ahead log through {@code ScrFileSystem}
 * (set only as {@code fs.hdfs.impl}), and gets the block being written short-circuit.
 *
 * <p>One RegionServer, one DataNode. A replication peer whose endpoint collects what the
 * RegionServer's replication source read from the WAL ({@code WALEntryStream}: read to the end,
 * sleep, reopen at the remembered position) must receive exactly the edits written, while the
 * RegionServer's scr engine counts short-circuit bytes: the only reads in that window are the
 * WAL's, and the WAL never leaves its first block (still being written), so every one of those
 * bytes is a read of a block under construction. A second test tails the same live WAL as
 * replication does, once through a {@code ScrFileSystem} and once through a stock {@code
 * DistributedFileSystem}: the same bytes, and the scr stream's own read statistics show them
 * short-circuit.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class AbstractHBaseWalTailTest {
  private static final TableName TABLE = TableName.valueOf("scr_wal_tail");
  private static final byte[] CF = Bytes.toBytes("f");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final int VALUE = 1500;

  /** Rows per test: about 0.5 MiB of WAL each, so the WAL stays in its first (4 MiB) block. */
  private static final int ROWS = 300;

  /** What the peer's endpoint received, row to value, and how many cells it received in all. */
  static final ConcurrentMap<String, byte[]> REPLICATED = new ConcurrentHashMap<>();

  static final AtomicInteger REPLICATED_CELLS = new AtomicInteger();

  /**
   * RegionServer keys (hbase-site.xml): a client context of its own (the cluster tests of the same
   * mode share a JVM, and an engine outlives its cluster there), and a replication source that
   * polls its WAL quickly.
   */
  static void regionServerKeys(Configuration conf) {
    conf.set("scr.client.context", conf.get("scr.client.context") + "-wal-tail");
    // The replication source's sleep when it reached the end of the WAL (default 1 s).
    conf.setLong("replication.source.sleepforretries", 100);
    conf.setInt("replication.source.maxretriesmultiplier", 1);
  }

  @AfterAll
  static void stop() throws Exception {
    AbstractHBaseScrTest.stopCluster();
  }

  /**
   * The peer: receives the entries the replication source read from the WAL and keeps their cells.
   * Same cluster (it ships nothing anywhere), so it must say it may replicate to itself.
   */
  public static final class CollectingEndpoint extends BaseReplicationEndpoint {
    private static final UUID PEER = UUID.nameUUIDFromBytes(Bytes.toBytes("scr-wal-tail"));

    @Override
    public UUID getPeerUUID() {
      return PEER;
    }

    @Override
    public boolean canReplicateToSameCluster() {
      return true;
    }

    @Override
    public boolean replicate(ReplicateContext context) {
      for (WAL.Entry entry : context.getEntries()) {
        if (!entry.getKey().getTableName().equals(TABLE)) {
          continue;
        }
        for (Cell cell : entry.getEdit().getCells()) {
          if (CellUtil.matchingFamily(cell, CF)) {
            REPLICATED.put(Bytes.toString(CellUtil.cloneRow(cell)), CellUtil.cloneValue(cell));
            REPLICATED_CELLS.incrementAndGet();
          }
        }
      }
      return true;
    }

    @Override
    public void start() {
      startAsync();
    }

    @Override
    public void stop() {
      stopAsync();
    }

    @Override
    protected void doStart() {
      notifyStarted();
    }

    @Override
    protected void doStop() {
      notifyStopped();
    }
  }

  private static String row(int i) {
    return String.format("wal-%06d", i);
  }

  private static byte[] value(int i) {
    byte[] v = new byte[VALUE];
    new Random(i * 131L).nextBytes(v);
    return v;
  }

  private static HRegionServer regionServer() throws IOException {
    return AbstractHBaseScrTest.util().getHBaseCluster().getRegionServer(0);
  }

  private static ScrFileSystem regionServerScr() throws IOException {
    HFileSystem fs = (HFileSystem) regionServer().getFileSystem();
    return (ScrFileSystem) fs.getBackingFs();
  }

  /** Short-circuit bytes of the RegionServer's scr engine (its WAL file system shares it). */
  private static long engineShortCircuitBytes() throws IOException {
    return regionServerScr().scrClient().metricsSnapshot().shortCircuitBytes();
  }

  /** The RegionServer's current WAL file: the live one the table's edits go to. */
  private static Path liveWal() throws IOException {
    HRegion region = AbstractHBaseScrTest.util().getHBaseCluster().getRegions(TABLE).get(0);
    WAL wal = regionServer().getWAL(region.getRegionInfo());
    return ((AbstractFSWAL<?>) wal).getCurrentFileName();
  }

  /** One put per call: each is its own WAL append and sync (an hflush of the WAL). */
  private static void putRows(int from, int to) throws IOException {
    try (Table t = AbstractHBaseScrTest.util().getConnection().getTable(TABLE)) {
      for (int i = from; i < to; i++) {
        t.put(new Put(Bytes.toBytes(row(i))).addColumn(CF, Q, value(i)));
      }
    }
  }

  @Test
  @Order(1)
  void replicationTailsTheLiveWalShortCircuitAndShipsEveryEdit() throws Exception {
    REPLICATED.clear();
    REPLICATED_CELLS.set(0);
    AbstractHBaseScrTest.util()
        .getAdmin()
        .createTable(
            TableDescriptorBuilder.newBuilder(TABLE)
                .setColumnFamily(
                    ColumnFamilyDescriptorBuilder.newBuilder(CF)
                        .setScope(HConstants.REPLICATION_SCOPE_GLOBAL)
                        .build())
                .build());
    Path wal = liveWal();
    long scBefore = engineShortCircuitBytes();
    AbstractHBaseScrTest.util()
        .getAdmin()
        .addReplicationPeer(
            "scrtail",
            ReplicationPeerConfig.newBuilder()
                .setClusterKey(AbstractHBaseScrTest.util().getClusterKey())
                .setReplicationEndpointImpl(CollectingEndpoint.class.getName())
                .build());

    putRows(0, ROWS);

    long deadline = System.nanoTime() + 60_000_000_000L;
    while (REPLICATED.size() < ROWS && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(ROWS, REPLICATED.size(), "rows the replication source shipped");
    for (int i = 0; i < ROWS; i++) {
      assertArrayEquals(value(i), REPLICATED.get(row(i)), "replicated value of " + row(i));
    }
    assertEquals(ROWS, REPLICATED_CELLS.get(), "each edit shipped once");
    assertEquals(wal, liveWal(), "the WAL did not roll: every edit came from the open file");
    long sc = engineShortCircuitBytes() - scBefore;
    assertTrue(
        sc > 0,
        "the replication source read the open WAL "
            + wal
            + " with no short-circuit byte (only the WAL was read in this window)");
  }

  @Test
  @Order(2)
  void tailingTheLiveWalReadsTheSameBytesAsStockAndCountsThemShortCircuit() throws Exception {
    Path wal = liveWal();
    Configuration rsConf = regionServerScr().getConf();
    Configuration stockConf = new Configuration(rsConf);
    stockConf.set("fs.hdfs.impl", DistributedFileSystem.class.getName());
    try (FileSystem scr = FileSystem.newInstance(wal.toUri(), rsConf);
        FileSystem stock = FileSystem.newInstance(wal.toUri(), stockConf)) {
      assertTrue(scr instanceof ScrFileSystem, "fs.hdfs.impl gives ScrFileSystem");
      assertEquals(DistributedFileSystem.class, stock.getClass());
      Tail scrTail = new Tail(scr, wal);
      Tail stockTail = new Tail(stock, wal);

      AtomicReference<Throwable> writerFailure = new AtomicReference<>();
      Thread writer =
          new Thread(
              () -> {
                try {
                  putRows(ROWS, 2 * ROWS);
                } catch (Throwable e) {
                  writerFailure.set(e);
                }
              },
              "wal-writer");
      writer.start();
      while (writer.isAlive()) {
        scrTail.poll();
        stockTail.poll();
        Thread.sleep(5);
      }
      writer.join();
      assertEquals(null, writerFailure.get(), "writer");
      // The writer's last sync has returned: every edit is visible. Tail until both agree.
      long deadline = System.nanoTime() + 30_000_000_000L;
      do {
        scrTail.poll();
        stockTail.poll();
      } while ((scrTail.position() != stockTail.position() || scrTail.reopens < 2)
          && System.nanoTime() < deadline);
      assertEquals(wal, liveWal(), "the WAL did not roll: every byte came from the open file");
      assertTrue(scrTail.position() > 0, "the tail read the WAL");
      assertArrayEquals(
          stockTail.bytes.toByteArray(),
          scrTail.bytes.toByteArray(),
          "ScrFileSystem and stock read the same live WAL bytes");
      assertEquals(0, stockTail.shortCircuit, "stock short-circuit reads are off");
      assertTrue(
          scrTail.shortCircuit > 0,
          "ScrFileSystem read "
              + scrTail.total
              + " bytes of the open WAL with no short-circuit byte (stream read statistics)");
      System.out.printf(
          "WAL tail: %d bytes in %d reopens, %.1f %% short-circuit%n",
          scrTail.total, scrTail.reopens, 100.0 * scrTail.shortCircuit / scrTail.total);
    }
  }

  /**
   * A tailing reader as {@code WALEntryStream} is one: open, seek to the remembered position, read
   * to the end, close; the next poll reopens. Sums the streams' own read statistics.
   */
  private static final class Tail {
    private final FileSystem fs;
    private final Path file;
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    long total;
    long shortCircuit;
    int reopens;

    Tail(FileSystem fs, Path file) {
      this.fs = fs;
      this.file = file;
    }

    long position() {
      return bytes.size();
    }

    void poll() throws IOException {
      byte[] buf = new byte[64 * 1024];
      try (FSDataInputStream in = fs.open(file)) {
        reopens++;
        in.seek(position());
        int n;
        while ((n = in.read(buf)) > 0) {
          bytes.write(buf, 0, n);
        }
        HdfsDataInputStream hdfs = (HdfsDataInputStream) in;
        assertNotNull(hdfs.getReadStatistics());
        total += hdfs.getReadStatistics().getTotalBytesRead();
        shortCircuit += hdfs.getReadStatistics().getTotalShortCircuitBytesRead();
      }
    }
  }
}
