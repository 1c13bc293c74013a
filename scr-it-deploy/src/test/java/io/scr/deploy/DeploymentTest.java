package io.scr.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.deploy.DeployedHdfs.DataNode;
import io.scr.testing.ChildJvm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * scr as deployed: one NameNode and two DataNodes — stock with libhadoop (mode A) and the scr shim
 * without libhadoop (modes B and C) — each a JVM of its own run as the DataNode user, clients as
 * JVMs run as the client user, configured only by their own hdfs-site.xml with the keys of
 * docs/user-guide.md and the jars it deploys ({@link DeployedHdfs}).
 *
 * <p>Every read proves short-circuit twice, from both ends: the client's stream counts every byte
 * short-circuit ({@code ReadStatistics}), and the DataNode's own TCP {@code BytesRead} (its JMX
 * endpoint) grows by exactly what a TCP control read made afterwards adds, so it stayed flat during
 * the client's read while being demonstrably live. Scr clients run without libhadoop on their
 * library path, so stock short-circuit cannot be what served them; {@code /proc/<pid>/maps} shows
 * which JVM loaded libhadoop.
 *
 * <p>The cases share the cluster and run in order; the last two kill a DataNode each.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
// Runs for everyone (single-user when not root); tagged so a root build that runs only the
// root-only tests (-Dgroups=requires-root) also runs the multi-user form.
@Tag("requires-root")
class DeploymentTest {
  private static final int LEN = 4 * DeployedHdfs.BLOCK_SIZE;
  private static final String STOCK_FILE = "/deploy/on-stock.bin";
  private static final String SHIM_FILE = "/deploy/on-shim.bin";
  private static final String RESTART_FILE = "/deploy/restart.bin";
  private static final String STOCK_RESTART_FILE = "/deploy/restart-stock.bin";

  /**
   * The TCP control read's file: one block (one atomic increment of the DataNode's counter) whose
   * cost in BytesRead (data plus 4 checksum bytes per 512) is no multiple of 516, so no TCP read of
   * the 4-block test files (whole chunks of 512 + 4) can add up to it or hide behind it.
   */
  private static final int CONTROL_LEN = 777_001;

  private static final Map<DataNode, Long> CONTROL_COST = new LinkedHashMap<>();
  private static final Duration CLIENT_TIMEOUT = Duration.ofMinutes(2);
  private static final String LIBHADOOP = "libhadoop.so";

  private static DeployedHdfs hdfs;
  private static DataNode stock;
  private static DataNode shim;
  private static final Map<String, Long> CRCS = new LinkedHashMap<>();
  private static long startNanos;

  @BeforeAll
  static void deploy() throws Exception {
    startNanos = System.nanoTime();
    hdfs = DeployedHdfs.create();
    log(
        "DataNode user "
            + hdfs.dataNodeUser()
            + ", client user "
            + hdfs.clientUser()
            + (hdfs.degradation() == null ? "" : "; DEGRADED: " + hdfs.degradation()));
    hdfs.startNameNode();
    stock = hdfs.startDataNode("dn-stock", false);
    shim = hdfs.startDataNode("dn-shim", true);
    hdfs.awaitDataNode(stock);
    hdfs.awaitDataNode(shim);
    write(stock, STOCK_FILE, 1);
    write(shim, SHIM_FILE, 2);
    write(shim, RESTART_FILE, 3);
    write(stock, STOCK_RESTART_FILE, 5);
    for (DataNode dn : List.of(stock, shim)) {
      String control = controlFile(dn);
      byte[] data = new byte[CONTROL_LEN];
      new Random(4).nextBytes(data);
      hdfs.writeFile(dn, control, data);
      long before = hdfs.bytesRead(dn);
      assertEquals(CONTROL_LEN, hdfs.readOverTcp(control));
      CONTROL_COST.put(dn, hdfs.awaitBytesRead(dn, before + 1) - before);
      log(
          dn
              + ": a TCP read of "
              + CONTROL_LEN
              + " bytes adds "
              + CONTROL_COST.get(dn)
              + " to BytesRead");
    }
    log(String.format("cluster up in %.1f s", (System.nanoTime() - startNanos) / 1e9));
  }

  @AfterAll
  static void tearDown() throws IOException {
    if (hdfs == null) {
      return;
    }
    try {
      hdfs.keepLogs(Paths.get(System.getProperty("java.io.tmpdir")).resolveSibling("deploy-logs"));
    } finally {
      hdfs.close();
      log(String.format("module run %.1f s", (System.nanoTime() - startNanos) / 1e9));
    }
  }

  @Test
  @Order(1)
  void processesRunAsTheirUsersAndOnlyTheStockDataNodeLoadsLibhadoop() throws IOException {
    for (ChildJvm c : List.of(hdfs.nameNode(), stock.process, shim.process)) {
      assertEquals(hdfs.dataNodeUser().uid, c.uids()[1], c + " effective uid");
    }
    assertTrue(
        !stock.process.mappedLibraries(LIBHADOOP).isEmpty(),
        "the stock DataNode serves short-circuit reads with libhadoop, which must be mapped");
    assertEquals(
        List.of(),
        shim.process.mappedLibraries(LIBHADOOP),
        "the shim DataNode runs without libhadoop");
    assertEquals(
        List.of(),
        hdfs.nameNode().mappedLibraries(LIBHADOOP),
        "the NameNode was started without libhadoop");
  }

  /**
   * The socket path check runs in both deployed DataNodes (no skip key): with a world-writable
   * socket directory the stock DataNode refuses to start, and the shim refuses to bind and says
   * why, while its DataNode keeps running.
   */
  @Test
  @Order(2)
  void bothDataNodesRefuseAWorldWritableSocketDirectory() throws Exception {
    DataNode stockInsecure = hdfs.startDataNode("dn-stock-0777", false, "rwxrwxrwx");
    DataNode shimInsecure = hdfs.startDataNode("dn-shim-0777", true, "rwxrwxrwx");
    try {
      int rc = stockInsecure.process.awaitExit(Duration.ofMinutes(2));
      assertTrue(rc != 0, "the stock DataNode must not start with a 0777 socket directory");
      List<String> refused = stockInsecure.process.logLines(stockInsecure.socketDir.toString());
      assertTrue(
          refused.stream().anyMatch(l -> l.contains("permissions") || l.contains("writable")),
          "the stock DataNode's refusal names the directory" + stockInsecure.process.describe());
      log("stock DataNode refused: " + refused.get(0));
      String shimRefusal =
          "The scr shim cannot serve short-circuit reads on " + shimInsecure.socket();
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (shimInsecure.process.logLines(shimRefusal).isEmpty()) {
        assertTrue(
            shimInsecure.process.isAlive() && System.nanoTime() - deadline < 0,
            "the shim must refuse the 0777 socket directory" + shimInsecure.process.describe());
        Thread.sleep(100); // the refusal shows only in the DataNode's log
      }
      log("shim refused: " + shimInsecure.process.logLines(shimRefusal).get(0));
      assertTrue(
          shimInsecure.process.logLines("the socket path security check is OFF").isEmpty(),
          "no skip key in a deployed shim");
      assertTrue(shimInsecure.process.isAlive(), "the shim's refusal does not stop its DataNode");
      assertTrue(!Files.exists(shimInsecure.socket()), "the shim bound nothing");
    } finally {
      stockInsecure.process.kill();
      shimInsecure.process.kill();
    }
  }

  /** Mode A: stock DataNode with libhadoop, scr clients both ways, no libhadoop in the client. */
  @Test
  @Order(3)
  void stockDataNodeServesScrClients() throws Exception {
    Map<String, String> r = read("a-accessor", stock, accessorConf(stock), true, false, STOCK_FILE);
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", r.get("fs"));
    r = read("a-scrfs", stock, scrFileSystemConf(stock), true, false, STOCK_FILE);
    assertEquals("io.scr.core.hdfs.ScrFileSystem", r.get("fs"));
  }

  /** Mode B: the shim DataNode without libhadoop, scr clients both ways: no libhadoop anywhere. */
  @Test
  @Order(4)
  void shimDataNodeServesScrClients() throws Exception {
    Map<String, String> r = read("b-accessor", shim, accessorConf(shim), true, false, SHIM_FILE);
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", r.get("fs"));
    r = read("b-scrfs", shim, scrFileSystemConf(shim), true, false, SHIM_FILE);
    assertEquals("io.scr.core.hdfs.ScrFileSystem", r.get("fs"));
  }

  /** Mode C: a stock client with libhadoop and stock short-circuit reads, through the shim. */
  @Test
  @Order(5)
  void stockClientReadsThroughTheShim() throws Exception {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("dfs.client.read.shortcircuit", "true");
    conf.put("dfs.domain.socket.path", shim.socketTemplate);
    Map<String, String> r = read("c-stock", shim, conf, false, true, SHIM_FILE);
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", r.get("fs"));
    assertEquals("true", r.get("nativeLoaded"), "the stock client needs libhadoop: " + r);
  }

  /**
   * A socket directory the client user may traverse but not list (0711, a sound layout): the
   * accessor resolves {@code _PORT} from {@code dfs.datanode.address} in the client's own
   * hdfs-site.xml (as on a host whose DataNode and clients share it) and says so once.
   */
  @Test
  @Order(6)
  void socketDirectoryTheClientMayTraverseButNotList() throws Exception {
    Path dir = stock.socketDir;
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    try {
      Map<String, String> accessor = accessorConf(stock);
      accessor.put("dfs.datanode.address", "127.0.0.1:" + stock.xferPort);
      ChildJvm[] client = new ChildJvm[1];
      Map<String, String> r =
          read("d-accessor-0711", stock, accessor, true, false, STOCK_FILE, dir.toString(), client);
      boolean separate = hdfs.degradation() == null;
      if (separate) {
        assertTrue(
            r.get("listDir").startsWith("no:"),
            "the client user must not be able to list a 0711 directory it does not own: " + r);
        assertTrue(
            !client[0].logLines("cannot list the socket directory " + dir).isEmpty(),
            "the accessor says once that it used dfs.datanode.address's port"
                + client[0].describe());
      } else {
        log(
            "DEGRADED: the client is the directory's owner and may list it ("
                + r.get("listDir")
                + "); the 0711 case runs the same code without the user boundary");
      }
      read(
          "d-scrfs-0711",
          stock,
          scrFileSystemConf(stock),
          true,
          false,
          STOCK_FILE,
          dir.toString(),
          null);
    } finally {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }

  /**
   * kill -9 of the shim DataNode while scr clients hold open streams, then a restart over the stale
   * socket: the same streams read the blocks they had not opened yet (each a new fd request to the
   * new DataNode process) short-circuit again.
   */
  @Test
  @Order(7)
  void shimDataNodeKilledAndRestartedUnderReadingClients() throws Exception {
    killAndRestartUnderReadingClients(shim, RESTART_FILE);
  }

  /** The same with the stock DataNode (mode A), whose libhadoop binds over its stale socket. */
  @Test
  @Order(8)
  void stockDataNodeKilledAndRestartedUnderReadingClients() throws Exception {
    killAndRestartUnderReadingClients(stock, STOCK_RESTART_FILE);
  }

  /**
   * A DataNode stopped the way init systems stop it (SIGTERM) never calls its plugins' {@code
   * stop()}; the shim's exit hook still unlinks its socket, so clients meet "no such socket" at
   * once rather than a stale socket nobody accepts on (docs/shim.md). Last: the shim DataNode stays
   * down.
   */
  @Test
  @Order(9)
  void shimDataNodeStoppedBySigtermRemovesItsSocket() throws Exception {
    java.nio.file.Path socket = shim.socket();
    assertTrue(java.nio.file.Files.exists(socket), "serving on " + socket);
    shim.process.process.destroy(); // SIGTERM to the DataNode's JVM
    assertTrue(
        shim.process.process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS),
        shim + " did not exit on SIGTERM");
    assertFalse(
        java.nio.file.Files.exists(socket),
        socket + " left behind by a DataNode stopped with SIGTERM");
  }

  private static void killAndRestartUnderReadingClients(DataNode dn, String file) throws Exception {
    long crc = CRCS.get(file);
    int first = DeployedHdfs.BLOCK_SIZE;
    List<String> args =
        List.of(
            "restart",
            file,
            String.valueOf(LEN),
            String.valueOf(crc),
            String.valueOf(first),
            "30000");
    String tag = dn.shim ? "b" : "a";
    List<ChildJvm> clients = new ArrayList<>();
    clients.add(
        hdfs.startClient("e-" + tag + "-accessor-restart", accessorConf(dn), true, false, args));
    clients.add(
        hdfs.startClient("e-" + tag + "-scrfs-restart", scrFileSystemConf(dn), true, false, args));
    for (ChildJvm c : clients) {
      Map<String, String> paused =
          ChildJvm.parseProperties(c.awaitLine(DeployClient.PAUSED, CLIENT_TIMEOUT));
      assertEquals(String.valueOf(first), paused.get("sc"), c + " before the kill: " + paused);
    }
    long killed = System.nanoTime();
    hdfs.killAndRestart(dn);
    log(
        String.format(
            "%s killed (-9) and serving again in %.1f s", dn, (System.nanoTime() - killed) / 1e9));
    for (ChildJvm c : clients) {
      c.send("go");
    }
    for (ChildJvm c : clients) {
      Map<String, String> r =
          ChildJvm.parseProperties(c.awaitLine(DeployClient.RESULT, CLIENT_TIMEOUT));
      log(c.name + ": " + r);
      assertEquals("true", r.get("crcOk"), c + " read wrong bytes: " + r);
      assertEquals(
          r.get("restBytes"),
          r.get("restLastPassSc"),
          c + ": short-circuit did not resume on the stream open across the restart: " + r);
      assertTrue(
          Long.parseLong(r.get("sc")) >= first + Long.parseLong(r.get("restBytes")),
          c + ": the stream's short-circuit bytes: " + r);
      assertEquals(List.of(), c.mappedLibraries(LIBHADOOP), c + " loaded libhadoop");
      c.send("exit");
      assertEquals(0, c.awaitExit(CLIENT_TIMEOUT), c + c.describe());
    }
    assertEquals(dn.shim, dn.process.mappedLibraries(LIBHADOOP).isEmpty(), dn + " libhadoop");
  }

  // ------------------------------------------------------------------ helpers

  /** docs/user-guide.md: the replica accessor under the stock DistributedFileSystem. */
  private static Map<String, String> accessorConf(DataNode dn) {
    Map<String, String> c = new LinkedHashMap<>();
    c.put(
        "dfs.client.replica.accessor.builder.classes",
        "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
    c.put("scr.client.socket.paths", dn.socketTemplate);
    return c;
  }

  /** docs/user-guide.md: the fast path, ScrFileSystem as the hdfs:// file system. */
  private static Map<String, String> scrFileSystemConf(DataNode dn) {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
    c.put("dfs.client.read.shortcircuit", "true");
    c.put("dfs.domain.socket.path", dn.socketTemplate);
    return c;
  }

  private static Map<String, String> read(
      String name,
      DataNode dn,
      Map<String, String> conf,
      boolean scrBundle,
      boolean libhadoop,
      String file)
      throws Exception {
    return read(name, dn, conf, scrBundle, libhadoop, file, null, null);
  }

  /**
   * Runs one client JVM reading {@code file} (held by {@code dn}) and checks both ends: every byte
   * short-circuit in the stream's statistics, the right bytes, the client user, libhadoop mapped
   * exactly when given, and the DataNode's TCP BytesRead flat across the read.
   */
  private static Map<String, String> read(
      String name,
      DataNode dn,
      Map<String, String> conf,
      boolean scrBundle,
      boolean libhadoop,
      String file,
      String listDir,
      ChildJvm[] started)
      throws Exception {
    long before = hdfs.bytesRead(dn);
    List<String> args =
        new ArrayList<>(List.of("read", file, String.valueOf(LEN), String.valueOf(CRCS.get(file))));
    if (listDir != null) {
      args.add(listDir);
    }
    ChildJvm c = hdfs.startClient(name, conf, scrBundle, libhadoop, args);
    if (started != null) {
      started[0] = c;
    }
    Map<String, String> r =
        ChildJvm.parseProperties(c.awaitLine(DeployClient.RESULT, CLIENT_TIMEOUT));
    List<String> mapped = c.mappedLibraries(LIBHADOOP);
    int euid = c.uids()[1];
    c.send("exit");
    int rc = c.awaitExit(CLIENT_TIMEOUT);
    // The control, after the client's read: it must show in the DataNode's counter, alone.
    long control = hdfs.readOverTcp(controlFile(dn));
    long cost = CONTROL_COST.get(dn);
    long after = hdfs.awaitBytesRead(dn, before + cost);
    log(
        String.format(
            "%s via %s: stream short-circuit %s of %s bytes; DataNode BytesRead %d -> %d"
                + " (TCP control read: %d bytes, BytesRead +%d); libhadoop mapped in client: %s",
            name, dn, r.get("sc"), r.get("total"), before, after, control, cost, mapped));
    assertEquals(0, rc, name + " exit code" + c.describe());
    assertEquals("true", r.get("crcOk"), name + " read wrong bytes: " + r);
    assertEquals(String.valueOf(LEN), r.get("total"), name + ": " + r);
    assertEquals(
        String.valueOf(LEN),
        r.get("sc"),
        name + ": every byte must be read short-circuit (ReadStatistics): " + r + c.describe());
    assertEquals(CONTROL_LEN, control);
    assertEquals(
        before + cost,
        after,
        name
            + ": the DataNode's TCP BytesRead grew by "
            + (after - before - cost)
            + " during the short-circuit read (beyond the control read's "
            + cost
            + ")");
    assertEquals(hdfs.clientUser().uid, euid, name + " effective uid");
    assertEquals(hdfs.clientUser().name, r.get("user"), name + " HDFS user");
    if (libhadoop) {
      assertTrue(!mapped.isEmpty(), name + ": libhadoop should be mapped (positive control)");
    } else {
      assertEquals(List.of(), mapped, name + " must not load libhadoop");
      assertEquals("false", r.get("nativeLoaded"), name + ": " + r);
    }
    return r;
  }

  private static void write(DataNode dn, String path, long seed) throws IOException {
    byte[] data = new byte[LEN];
    new Random(seed).nextBytes(data);
    hdfs.writeFile(dn, path, data);
    CRC32 crc = new CRC32();
    crc.update(data);
    CRCS.put(path, crc.getValue());
  }

  private static String controlFile(DataNode dn) {
    return "/deploy/control-" + dn.name + ".bin";
  }

  private static void log(String line) {
    System.out.println("scr-it-deploy: " + line);
  }
}
