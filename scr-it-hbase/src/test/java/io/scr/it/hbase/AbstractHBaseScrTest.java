package io.scr.it.hbase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.fs.HFileSystem;
import org.apache.hadoop.hbase.io.FSDataInputStreamWrapper;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.NativeCodeLoader;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * An HBase mini cluster (one RegionServer, one DataNode) with scr enabled only through
 * configuration, exactly the keys a user puts in {@code hbase-site.xml} (RegionServer) and {@code
 * hdfs-site.xml} (DataNode). Each subclass is one deployment: which DataNode serves the socket (the
 * scr shim, or a stock DataNode with libhadoop) and how the RegionServer reaches scr (the replica
 * accessor inside the stock {@code DistributedFileSystem}, or {@code ScrFileSystem} as {@code
 * fs.hdfs.impl}). The RegionServer's stock short-circuit reads stay off in every case, so every
 * short-circuit byte counted is scr's. Loads rows, flushes, major-compacts, then checks random gets
 * and scans against the loaded values and HBase's own read statistics.
 *
 * <p>The tests run in order on one cluster per subclass (a start costs 20 to 30 s).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class AbstractHBaseScrTest {
  private static final TableName TABLE = TableName.valueOf("scr_it");
  private static final byte[] CF = Bytes.toBytes("f");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final int ROWS = 12_000;
  private static final int VALUE = 700;

  private static Path socketDir;
  private static DataNodeSide dataNodeSide;
  private static ClientSide clientSide;
  private static HBaseTestingUtility util;

  /** How the DataNode serves short-circuit reads. */
  enum DataNodeSide {
    /** The scr shim plugin, no libhadoop anywhere (deployment mode B). */
    SHIM,
    /** A stock DataNode with libhadoop (deployment mode A). */
    STOCK
  }

  /** How the RegionServer reaches scr. */
  enum ClientSide {
    /** {@code dfs.client.replica.accessor.builder.classes}: the stock file system asks scr. */
    ACCESSOR,
    /** {@code fs.hdfs.impl = io.scr.core.hdfs.ScrFileSystem}. */
    SCR_FILE_SYSTEM
  }

  /**
   * Starts the cluster: HDFS first with the DataNode's hdfs-site.xml keys, then HBase with the
   * RegionServer's hbase-site.xml keys (MiniDFSCluster copies the configuration per DataNode, so
   * the RegionServer's keys never reach the DataNode, as on a real host with two files).
   */
  static void startCluster(DataNodeSide dataNode, ClientSide client) throws Exception {
    startCluster(dataNode, client, c -> {});
  }

  /**
   * As {@link #startCluster(DataNodeSide, ClientSide)}, with {@code regionServer} adding keys to
   * the RegionServer's hbase-site.xml.
   */
  static void startCluster(
      DataNodeSide dataNode, ClientSide client, Consumer<Configuration> regionServer)
      throws Exception {
    dataNodeSide = dataNode;
    clientSide = client;
    // sun_path holds 107 bytes: keep the socket under /tmp, created before the cluster starts.
    socketDir = Files.createTempDirectory(Paths.get("/tmp"), "scr-hbase-");
    String socket = socketDir.resolve("scr._PORT.sock").toString();

    Configuration conf = HBaseConfiguration.create();
    // Several HDFS blocks per HFile, so reads cross block boundaries.
    conf.setLong("dfs.blocksize", 2L << 20);
    // hdfs-site.xml of the DataNode.
    if (dataNode == DataNodeSide.SHIM) {
      // The shim serves short-circuit reads without libhadoop.
      // The socket directory (created 0700 by this user, the DataNode's) is checked for real;
      // only the shared temporary directory above it (world-writable /tmp) is trusted, by the
      // test build of the plugin.
      conf.set("dfs.datanode.plugins", "io.scr.shim.TempDirShimPlugin");
      conf.set("scr.shim.socket.path", socket);
    } else {
      // A stock DataNode binds its socket only when short-circuit reads are on in ITS own
      // configuration, and needs libhadoop for it.
      conf.setBoolean("dfs.client.read.shortcircuit", true);
      conf.set("dfs.domain.socket.path", socket);
      org.apache.hadoop.net.unix.DomainSocket.disableBindPathValidation(); // temp directories
    }
    util = new HBaseTestingUtility(conf);
    util.startMiniDFSCluster(1);
    if (dataNode == DataNodeSide.SHIM) {
      awaitShim(util.getDFSCluster().getDataNodes().get(0));
    }

    // hbase-site.xml of the RegionServer. Stock short-circuit reads off (hbase-default.xml blanks
    // dfs.client.read.shortcircuit and dfs.domain.socket.path anyway): every short-circuit byte
    // is scr's. scr finds the DataNode's socket through scr.client.socket.paths.
    conf = util.getConfiguration();
    conf.setBoolean("dfs.client.read.shortcircuit", false);
    conf.unset("dfs.domain.socket.path");
    conf.unset("dfs.datanode.plugins");
    conf.set("scr.client.socket.paths", socket);
    // Each RegionServer of a real cluster is its own process; here the subclasses share a JVM,
    // and an engine is shared by client context: each deployment gets its own.
    conf.set("scr.client.context", "hbase-" + dataNode + "-" + client);
    if (client == ClientSide.ACCESSOR) {
      conf.set(
          "dfs.client.replica.accessor.builder.classes",
          "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
    } else {
      conf.set("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
    }
    regionServer.accept(conf);
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(
        StartMiniClusterOption.builder().numMasters(1).numRegionServers(1).build());
  }

  /** The running cluster's testing utility. */
  static HBaseTestingUtility util() {
    return util;
  }

  @AfterAll
  static void stopCluster() throws Exception {
    try {
      Class.forName("io.scr.core.hdfs.ScrReplicaAccessorBuilder")
          .getMethod("releaseAll")
          .invoke(null);
      if (util != null) {
        util.shutdownMiniCluster();
        util = null;
      }
      // HBase leaves its file systems in the JVM's cache; closing them releases their scr engines.
      org.apache.hadoop.fs.FileSystem.closeAll();
    } finally {
      if (socketDir != null) {
        try (Stream<Path> files = Files.walk(socketDir)) {
          for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
            Files.deleteIfExists(p);
          }
        }
      }
    }
  }

  /** Waits on the shim's own serving latch (it binds once the DataNode's dataset exists). */
  private static void awaitShim(DataNode dn) throws Exception {
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    ServicePlugin shim = null;
    for (ServicePlugin p : plugins) {
      // The shim plugin or a test build of it (the class named in dfs.datanode.plugins).
      for (Class<?> c = p.getClass(); c != null; c = c.getSuperclass()) {
        if (c.getName().equals("io.scr.shim.ScrShimPlugin")) {
          shim = p;
        }
      }
    }
    assertNotNull(shim, "the DataNode loaded io.scr.shim.ScrShimPlugin from dfs.datanode.plugins");
    boolean serving =
        (Boolean) shim.getClass().getMethod("awaitServing", long.class).invoke(shim, 30_000L);
    assertTrue(serving, "shim not serving: " + shim.getClass().getMethod("failure").invoke(shim));
  }

  private static byte[] row(int i) {
    return Bytes.toBytes(String.format("row-%08d", i));
  }

  /**
   * Rows divisible by 7 are overwritten after the first flush, so compaction must pick the newer.
   */
  private static byte[] value(int i, int version) {
    byte[] v = new byte[VALUE];
    new Random(i * 31L + version).nextBytes(v);
    return v;
  }

  private static byte[] expected(int i) {
    return value(i, i % 7 == 0 ? 2 : 1);
  }

  @Test
  @Order(1)
  void regionServerReadsThroughScrAsConfiguredAndLibhadoopOnlyWhereNeeded() throws IOException {
    HFileSystem fs = (HFileSystem) util.getHBaseCluster().getRegionServer(0).getFileSystem();
    if (clientSide == ClientSide.ACCESSOR) {
      assertEquals(
          "org.apache.hadoop.hdfs.DistributedFileSystem", fs.getBackingFs().getClass().getName());
      assertEquals(
          "io.scr.core.hdfs.ScrReplicaAccessorBuilder",
          fs.getConf().get("dfs.client.replica.accessor.builder.classes"));
    } else {
      assertEquals("io.scr.core.hdfs.ScrFileSystem", fs.getBackingFs().getClass().getName());
    }
    assertFalse(
        fs.getConf().getBoolean("dfs.client.read.shortcircuit", false),
        "stock short-circuit reads must be off in the RegionServer: every byte counted is scr's");
    if (dataNodeSide == DataNodeSide.SHIM) {
      assertFalse(NativeCodeLoader.isNativeCodeLoaded(), "mode B runs without libhadoop");
    } else {
      assertTrue(
          NativeCodeLoader.isNativeCodeLoaded(),
          "a stock DataNode needs libhadoop (this JVM is the DataNode's too)");
    }
  }

  @Test
  @Order(2)
  void loadFlushAndMajorCompact() throws Exception {
    util.getAdmin()
        .createTable(
            TableDescriptorBuilder.newBuilder(TABLE)
                .setColumnFamily(
                    // Data blocks bypass the block cache: every get and scan reads HDFS.
                    ColumnFamilyDescriptorBuilder.newBuilder(CF)
                        .setBlockCacheEnabled(false)
                        .build())
                .build());
    try (Table t = util.getConnection().getTable(TABLE)) {
      put(t, 0, ROWS / 2, i -> value(i, 1));
      util.flush(TABLE);
      put(t, ROWS / 2, ROWS, i -> value(i, 1));
      List<Put> overwrites = new ArrayList<>();
      for (int i = 0; i < ROWS; i += 7) {
        overwrites.add(new Put(row(i)).addColumn(CF, Q, value(i, 2)));
      }
      t.put(overwrites);
      util.flush(TABLE);
    }
    HRegion region = util.getHBaseCluster().getRegions(TABLE).get(0);
    assertEquals(2, region.getStore(CF).getStorefilesCount());
    long scBefore = FSDataInputStreamWrapper.getShortCircuitBytesRead();
    region.compact(true); // synchronous major compaction; its readers close when it ends
    assertEquals(1, region.getStore(CF).getStorefilesCount());
    assertTrue(
        FSDataInputStreamWrapper.getShortCircuitBytesRead() > scBefore,
        "the compaction read its inputs short-circuit");
  }

  @Test
  @Order(3)
  void randomGetsAndScansReturnTheLoadedValuesThroughShortCircuitReads() throws Exception {
    long scrBefore = scrShortCircuitBytes();
    long scBefore = FSDataInputStreamWrapper.getShortCircuitBytesRead();
    long totalBefore = FSDataInputStreamWrapper.getTotalBytesRead();
    try (Table t = util.getConnection().getTable(TABLE)) {
      Random rnd = new Random(3);
      for (int n = 0; n < 1500; n++) {
        int i = rnd.nextInt(ROWS);
        Result r = t.get(new Get(row(i)));
        assertArrayEquals(expected(i), r.getValue(CF, Q), "row " + i);
      }
      int i = 0;
      try (ResultScanner s = t.getScanner(new Scan().addFamily(CF))) {
        for (Result r : s) {
          assertArrayEquals(row(i), r.getRow());
          assertArrayEquals(expected(i), r.getValue(CF, Q), "scanned row " + i);
          i++;
        }
      }
      assertEquals(ROWS, i);
      int from = ROWS / 3;
      int to = from + 777;
      try (ResultScanner s =
          t.getScanner(new Scan().withStartRow(row(from)).withStopRow(row(to)).addFamily(CF))) {
        int j = from;
        for (Result r : s) {
          assertArrayEquals(expected(j), r.getValue(CF, Q), "range-scanned row " + j);
          j++;
        }
        assertEquals(to, j);
      }
    }
    // HBase adds a stream's HDFS ReadStatistics to these totals when the stream closes, which
    // closing the table's region does.
    util.getAdmin().disableTable(TABLE);
    long sc = FSDataInputStreamWrapper.getShortCircuitBytesRead() - scBefore;
    long total = FSDataInputStreamWrapper.getTotalBytesRead() - totalBefore;
    assertTrue(sc > 0, "short-circuit bytes " + sc + " of " + total);
    assertEquals(total, sc, "every HFile byte is local, so every byte short-circuits");
    if (clientSide == ClientSide.SCR_FILE_SYSTEM) {
      // scr's own count, from the engine behind the RegionServer's file system: the bytes are
      // scr's, not a stock reader's that happened to count short-circuit bytes too.
      assertTrue(scrShortCircuitBytes() - scrBefore > 0, "scr's engine read nothing");
    }
  }

  /** Short-circuit bytes of the RegionServer's scr engine (ScrFileSystem deployments), else 0. */
  private static long scrShortCircuitBytes() throws IOException {
    HFileSystem fs = (HFileSystem) util.getHBaseCluster().getRegionServer(0).getFileSystem();
    if (!(fs.getBackingFs() instanceof io.scr.core.hdfs.ScrFileSystem)) {
      return 0;
    }
    return ((io.scr.core.hdfs.ScrFileSystem) fs.getBackingFs())
        .scrClient()
        .metricsSnapshot()
        .shortCircuitBytes();
  }

  private interface Values {
    byte[] of(int i);
  }

  private static void put(Table t, int from, int to, Values values) throws IOException {
    List<Put> batch = new ArrayList<>();
    for (int i = from; i < to; i++) {
      batch.add(new Put(row(i)).addColumn(CF, Q, values.of(i)));
      if (batch.size() == 1000) {
        t.put(batch);
        batch.clear();
      }
    }
    t.put(batch);
  }
}
