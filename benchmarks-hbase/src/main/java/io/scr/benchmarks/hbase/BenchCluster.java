package io.scr.benchmarks.hbase;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.scr.core.ScrKeys;
import io.scr.shim.ScrShimKeys;
import io.scr.testing.ChildJvm;
import io.scr.testing.ClusterTree;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.URI;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hdfs.DistributedFileSystem;

/**
 * The benchmark's cluster, one process each, on this host: a NameNode, a DataNode, and HBase (a
 * master and a RegionServer with their ZooKeeper, HBase's standalone mode over this HDFS). The
 * harness JVM is the HBase client (PerformanceEvaluation runs in it).
 *
 * <p><b>Switching modes without rewriting data.</b> The DataNode keeps its storage directory and
 * ports across restarts, so a restart with or without the shim plugin serves the same block files
 * (and the same page cache); HBase keeps its root directory on HDFS, so a restart with another
 * client configuration reads the same HFiles. Only what a mode change needs restarts: HBase for
 * every mode (its HDFS client is configured at start), the DataNode when the mode's DataNode side
 * changes.
 *
 * <p><b>libhadoop.</b> A stock DataNode gets it (it serves stock short-circuit reads); the shim
 * DataNode does not (deployment mode B). Every HBase process gets it, whatever the mode, so that
 * HBase's own checksum code runs the same in every mode and only the read path differs.
 *
 * <p>Everything lives under one directory in {@code java.io.tmpdir}, deleted by {@link #close()}.
 * Children are {@link ChildJvm}s: started through {@code setpriv --pdeathsig KILL} when it is
 * installed (they die with the harness even when it is killed) and killed by a shutdown hook
 * otherwise.
 *
 * <p>Not thread-safe: driven from the harness's main thread.
 */
final class BenchCluster implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofMinutes(4);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** JVM flags for Hadoop and HBase on JDK 17. */
  static final List<String> JVM_FLAGS =
      List.of(
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
          "--add-opens=java.base/java.io=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.net=ALL-UNNAMED",
          "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
          "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
          "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
          "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
          "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
          "-Djava.net.preferIPv4Stack=true");

  private final Shape shape;
  private final Path tree;
  private final Path socketDir;
  private final Path nativeDir;
  private final Path noNativeDir;
  private final String classpath;
  private final boolean setpriv;
  private final int nameNodePort;
  private final int[] dataNodePorts;
  private final int[] hbasePorts;
  private final List<ChildJvm> children = new ArrayList<>();

  private ChildJvm nameNode;
  private ChildJvm dataNode;
  private Mode.DataNodeSide dataNodeSide;
  private int dataNodeStarts;
  private ChildJvm hbase;

  /** The mode whose HDFS client the running HBase process has (null: none runs). */
  private Mode hbaseMode;

  private int hbaseStarts;
  private DistributedFileSystem admin;
  private boolean closed;

  BenchCluster(Shape shape, Path nativeDir) throws IOException {
    this.shape = shape;
    this.nativeDir = nativeDir.toAbsolutePath();
    if (!Files.isRegularFile(nativeDir.resolve("libhadoop.so"))) {
      throw new IllegalStateException(
          "no libhadoop.so in "
              + nativeDir
              + ": the stock modes need it (the build unpacks it from"
              + " io.trino.hadoop:hadoop-apache; run through ./scr bench hbase or Maven)");
    }
    Path tmp = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath();
    Files.createDirectories(tmp);
    this.tree = Files.createTempDirectory(tmp, "hbase-bench-");
    // sun_path holds 107 bytes: a short directory of its own, 0755, owned by this user.
    this.socketDir = Files.createTempDirectory(tmp, "hb-");
    Files.setPosixFilePermissions(socketDir, PosixFilePermissions.fromString("rwxr-xr-x"));
    if (socketDir.toString().length() + "/scr.65535.sock".length() > 107) {
      throw new IllegalStateException(
          "the socket path under "
              + socketDir
              + " would exceed sun_path's 107 bytes: start with a shorter -Djava.io.tmpdir"
              + " (./scr: SCR_TMPDIR)");
    }
    this.noNativeDir = Files.createDirectories(tree.resolve("no-native"));
    // absolute: the children run in the cluster's directory
    StringBuilder cp = new StringBuilder();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator, -1)) {
      cp.append(cp.length() == 0 ? "" : File.pathSeparator).append(Path.of(e).toAbsolutePath());
    }
    this.classpath = cp.toString();
    this.setpriv = ChildJvm.onPath("setpriv");
    this.nameNodePort = freePorts(1)[0];
    this.dataNodePorts = freePorts(3);
    this.hbasePorts = freePorts(4); // ZooKeeper, master, JMX, RegionServer
  }

  Path tree() {
    return tree;
  }

  URI uri() {
    return URI.create("hdfs://127.0.0.1:" + nameNodePort);
  }

  /** The stock DataNode's socket ({@code _PORT} resolved by whoever reads it). */
  String stockSocket() {
    return socketDir.resolve("dn._PORT.sock").toString();
  }

  /** The shim's socket. */
  String shimSocket() {
    return socketDir.resolve("scr._PORT.sock").toString();
  }

  // ------------------------------------------------------------------------------------ HDFS

  /** Formats and starts the NameNode. */
  void startNameNode() throws IOException, InterruptedException {
    Path home = Files.createDirectories(tree.resolve("namenode"));
    Map<String, String> hdfs = commonHdfsSite();
    hdfs.putAll(ClusterTree.nameNodeSite(home.resolve("name"), nameNodePort));
    Path conf = writeConf(home.resolve("conf"), hdfs, "hdfs-site.xml");
    String main = "org.apache.hadoop.hdfs.server.namenode.NameNode";
    Path formatLog = tree.resolve("logs/namenode-format.log");
    ChildJvm format =
        launch(
            "namenode-format",
            conf,
            noNativeDir,
            main,
            List.of("-format", "-force", "-nonInteractive"),
            formatLog,
            List.of("-Xmx256m"));
    int rc = format.awaitExit(START_TIMEOUT);
    if (rc != 0) {
      throw new IllegalStateException("namenode -format exited " + rc + format.describe());
    }
    Path log = tree.resolve("logs/namenode.log");
    nameNode = launch("namenode", conf, noNativeDir, main, List.of(), log, List.of("-Xmx384m"));
    Configuration c = new Configuration();
    c.set("fs.defaultFS", uri().toString());
    c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
    c.setInt("ipc.client.connect.max.retries", 1);
    c.setInt("ipc.client.connect.retry.interval", 200);
    admin = (DistributedFileSystem) FileSystem.newInstance(uri(), c);
    nameNode.awaitTrue(
        "the NameNode to leave safe mode",
        START_TIMEOUT,
        () -> {
          try {
            return !admin.isInSafeMode();
          } catch (IOException e) {
            return false;
          }
        });
  }

  /**
   * Starts the DataNode with {@code side} (restarting it when it runs the other side; nothing when
   * it already runs this one) and waits until it serves its socket and has reported its blocks.
   */
  void dataNode(Mode.DataNodeSide side) throws IOException, InterruptedException {
    if (dataNode != null && dataNode.isAlive() && dataNodeSide == side) {
      return;
    }
    if (dataNode != null && dataNode.isAlive()) {
      dataNode.terminate(Duration.ofSeconds(60)); // an orderly shutdown, as a rolling restart does
    }
    dataNodeStarts++;
    Path home = Files.createDirectories(tree.resolve("datanode"));
    Map<String, String> hdfs = commonHdfsSite();
    hdfs.put("dfs.datanode.data.dir", home.resolve("data").toUri().toString());
    hdfs.put(ScrKeys.DFS_DATANODE_ADDRESS.name(), "127.0.0.1:" + dataNodePorts[0]);
    hdfs.put("dfs.datanode.http.address", "127.0.0.1:" + dataNodePorts[1]);
    hdfs.put("dfs.datanode.ipc.address", "127.0.0.1:" + dataNodePorts[2]);
    String main;
    Path libraryPath;
    String serving;
    if (side == Mode.DataNodeSide.SHIM) {
      // The shim plugin's build that trusts the shared temporary directory above its socket
      // directory (the socket directory itself is checked for real).
      hdfs.put("dfs.datanode.plugins", "io.scr.shim.TempDirShimPlugin");
      hdfs.put(ScrShimKeys.SOCKET_PATH.name(), shimSocket());
      main = "org.apache.hadoop.hdfs.server.datanode.DataNode";
      libraryPath = noNativeDir;
      serving = "scr shim serving short-circuit reads on " + socket(shimSocket());
    } else {
      // A stock DataNode binds its socket only with short-circuit reads on in its own
      // configuration; RelaxedDataNode skips libhadoop's check of the temporary directories.
      hdfs.put(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), "true");
      hdfs.put(ScrKeys.DFS_DOMAIN_SOCKET_PATH.name(), stockSocket());
      main = RelaxedDataNode.class.getName();
      libraryPath = nativeDir;
      serving = "Listening on UNIX domain socket: " + socket(stockSocket());
    }
    Path conf = writeConf(home.resolve("conf-" + dataNodeStarts), hdfs, "hdfs-site.xml");
    Files.writeString(conf.resolve("hadoop-metrics2-datanode.properties"), "*.period=1\n");
    String name = "datanode-" + dataNodeStarts + "-" + side;
    Path log = tree.resolve("logs/" + name + ".log");
    ChildJvm dn = launch(name, conf, libraryPath, main, List.of(), log, List.of("-Xmx512m"));
    dataNode = dn;
    dataNodeSide = side;
    dn.awaitTrue(
        "the DataNode (" + side + ") to serve its socket and report its blocks",
        START_TIMEOUT,
        () ->
            dn.logContains(serving)
                && dn.logContains("successfully registered with NN")
                && dn.logContains("Successfully sent block report"));
  }

  /** The DataNode's pid (for JFR and profilers). */
  long dataNodePid() {
    return dataNode.pid();
  }

  private String socket(String template) {
    return template.replace("_PORT", String.valueOf(dataNodePorts[0]));
  }

  /** The DataNode's activity counters ({@code ReadBlockOpNumOps}, {@code BytesRead}, ...). */
  JsonNode dataNodeActivity() throws IOException {
    return jmx(dataNodePorts[1], "Hadoop:service=DataNode,name=DataNodeActivity-*");
  }

  // ------------------------------------------------------------------------------------ HBase

  /**
   * Starts HBase (master, RegionServer and ZooKeeper in one process) with the HDFS client of {@code
   * mode}, waits until the RegionServer is live and {@code table} (when it exists) is available;
   * {@code extraJvmFlags} go to its JVM (e.g. a flight recording).
   */
  void startHBase(Mode mode, List<String> extraJvmFlags) throws Exception {
    if (hbase != null && hbase.isAlive()) {
      throw new IllegalStateException("HBase is running");
    }
    hbaseStarts++;
    Path home = Files.createDirectories(tree.resolve("hbase"));
    Map<String, String> site = new LinkedHashMap<>();
    site.put("hbase.cluster.distributed", "false");
    site.put("hbase.rootdir", uri() + "/hbase");
    site.put("fs.defaultFS", uri().toString());
    site.put("hbase.tmp.dir", home.resolve("tmp").toString());
    site.put("hbase.zookeeper.quorum", "127.0.0.1");
    site.put("hbase.zookeeper.property.clientPort", String.valueOf(hbasePorts[0]));
    site.put("hbase.zookeeper.property.dataDir", home.resolve("zk").toString());
    site.put("hbase.localcluster.assign.random.ports", "false");
    site.put("hbase.master.port", String.valueOf(hbasePorts[1]));
    site.put("hbase.regionserver.port", String.valueOf(hbasePorts[3]));
    // No web UIs (their Jetty start is several seconds of every HBase start on 2 busy cores): the
    // counters come over a JMX connector (hbaseJmx).
    site.put("hbase.master.info.port", "-1");
    site.put("hbase.regionserver.info.port", "-1");
    site.put("hbase.unsafe.stream.capability.enforce", "false");
    // HFiles (written by the RegionServer's client) get the shape's block size.
    site.put("dfs.blocksize", String.valueOf(shape.blockSize));
    site.put("dfs.replication", "1");
    site.put("hbase.regionserver.handler.count", "16");
    // Start and stop in seconds: the RegionServer reports every second, the master waits for one
    // RegionServer only. Neither touches the read path.
    site.put("hbase.regionserver.msginterval", "1000");
    site.put("hbase.master.wait.on.regionservers.mintostart", "1");
    site.put("hbase.master.wait.on.regionservers.timeout", "500");
    site.put("hbase.master.wait.on.regionservers.interval", "200");
    switch (mode.client) {
      case STOCK_TCP:
        site.put(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), "false");
        break;
      case STOCK_SCR:
        site.put(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), "true");
        site.put(ScrKeys.DFS_DOMAIN_SOCKET_PATH.name(), stockSocket());
        // hbase-default.xml's value, stated: stock short-circuit reads with HBase's buffer.
        site.put("dfs.client.read.shortcircuit.buffer.size", "131072");
        break;
      case ACCESSOR:
        site.put(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), "false");
        site.put(
            "dfs.client.replica.accessor.builder.classes",
            "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
        site.put(ScrKeys.CLIENT_SOCKET_PATHS.name(), clientSocket(mode));
        break;
      case SCR_FILE_SYSTEM:
        site.put(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), "false");
        site.put("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
        site.put(ScrKeys.CLIENT_SOCKET_PATHS.name(), clientSocket(mode));
        break;
    }
    Path conf = writeConf(home.resolve("conf-" + hbaseStarts), site, "hbase-site.xml");
    // metrics2 refreshes JMX once per period: 1 s, so counters read after a run are current.
    Files.writeString(conf.resolve("hadoop-metrics2-hbase.properties"), "*.period=1\n");
    String name = "hbase-" + hbaseStarts + "-" + mode;
    List<String> flags =
        new ArrayList<>(
            shape.quickStart
                ? List.of("-Xmx512m", "-XX:TieredStopAtLevel=1")
                : List.of("-Xms1536m", "-Xmx1536m"));
    flags.addAll(extraJvmFlags);
    flags.addAll(
        List.of(
            "-Dcom.sun.management.jmxremote.port=" + hbasePorts[2],
            "-Dcom.sun.management.jmxremote.rmi.port=" + hbasePorts[2],
            "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Djava.rmi.server.hostname=127.0.0.1",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false"));
    ChildJvm h =
        launch(
            name,
            conf,
            nativeDir,
            "org.apache.hadoop.hbase.master.HMaster",
            List.of("start"),
            tree.resolve("logs/" + name + ".log"),
            flags);
    hbase = h;
    hbaseMode = mode;
    h.awaitTrue(
        "HBase to start (master, RegionServer, ZooKeeper)",
        START_TIMEOUT,
        () -> h.logContains("Master has completed initialization"));
    try (Connection c = ConnectionFactory.createConnection(clientConf());
        Admin a = c.getAdmin()) {
      h.awaitTrue(
          "the RegionServer to be live and " + HBaseBench.TABLE + " available",
          START_TIMEOUT,
          () -> {
            try {
              if (a.getRegionServers().isEmpty()) {
                return false;
              }
              return !a.tableExists(HBaseBench.TABLE) || a.isTableAvailable(HBaseBench.TABLE);
            } catch (IOException e) {
              return false;
            }
          });
    }
  }

  private String clientSocket(Mode mode) {
    return mode.dataNode == Mode.DataNodeSide.SHIM ? shimSocket() : stockSocket();
  }

  /** The HBase client configuration of this cluster (PerformanceEvaluation's). */
  Configuration clientConf() {
    Configuration c = HBaseConfiguration.create();
    c.set("hbase.zookeeper.quorum", "127.0.0.1");
    c.setInt("hbase.zookeeper.property.clientPort", hbasePorts[0]);
    c.setInt("hbase.client.retries.number", 20);
    return c;
  }

  /**
   * Whether the running HBase process reads as {@code mode} does: the same HDFS client, and the
   * DataNode side {@code mode} reads from (any, for the floor, which reads no HDFS).
   */
  boolean hbaseServes(Mode mode) {
    return hbase != null
        && hbase.isAlive()
        && hbaseMode.client == mode.client
        && (mode.blockCache || dataNodeSide == mode.dataNode);
  }

  /** The HBase process's pid. */
  long hbasePid() {
    return hbase.pid();
  }

  /**
   * The numeric attributes of the HBase process's beans matching {@code query}, one JSON object a
   * bean, as an info server's {@code /jmx} would list them (read over a JMX connector: HBase runs
   * without its web UIs).
   */
  // The connector's registry is this harness's own child on 127.0.0.1, started with the port
  // given here: nothing it returns comes from anyone else.
  @SuppressWarnings("BanJNDI")
  JsonNode hbaseJmx(String query) throws IOException, InterruptedException {
    JMXServiceURL url =
        new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + hbasePorts[2] + "/jmxrmi");
    try (JMXConnector c = JMXConnectorFactory.connect(url)) {
      MBeanServerConnection server = c.getMBeanServerConnection();
      for (int attempt = 1; ; attempt++) {
        try {
          return beans(server, new ObjectName(query));
        } catch (InstanceNotFoundException e) {
          // metrics2 re-registers a source's bean when its attributes change (a region reopened
          // by a table change): the query saw the old one
          if (attempt == 10) {
            throw new IOException("JMX bean of " + query + " kept disappearing", e);
          }
          Thread.sleep(200);
        } catch (JMException e) {
          throw new IOException("JMX query " + query + " of the HBase process failed", e);
        }
      }
    }
  }

  private static ArrayNode beans(MBeanServerConnection server, ObjectName query)
      throws IOException, JMException {
    ArrayNode beans = JSON.createArrayNode();
    for (ObjectName name : server.queryNames(query, null)) {
      ObjectNode bean = beans.addObject();
      bean.put("name", name.toString());
      for (MBeanAttributeInfo a : server.getMBeanInfo(name).getAttributes()) {
        if (!a.isReadable()) {
          continue;
        }
        Object v = server.getAttribute(name, a.getName());
        if (v instanceof Long || v instanceof Integer) {
          bean.put(a.getName(), ((Number) v).longValue());
        } else if (v instanceof Number) {
          bean.put(a.getName(), ((Number) v).doubleValue());
        }
      }
    }
    return beans;
  }

  /** Shuts HBase down in order (regions closed, nothing to recover at the next start). */
  void stopHBase() throws Exception {
    if (hbase == null || !hbase.isAlive()) {
      return;
    }
    try (Connection c = ConnectionFactory.createConnection(clientConf());
        Admin a = c.getAdmin()) {
      a.shutdown();
    } catch (IOException e) {
      System.err.println("hbase-bench: orderly shutdown failed (" + e + "); killing HBase");
      hbase.kill();
    }
    if (!hbase.process.waitFor(120, TimeUnit.SECONDS)) {
      System.err.println("hbase-bench: HBase still running 120 s after shutdown; killing it");
      hbase.kill();
    }
  }

  // ------------------------------------------------------------------------------------ helpers

  private ChildJvm launch(
      String name,
      Path conf,
      Path libraryPath,
      String mainClass,
      List<String> args,
      Path log,
      List<String> extraFlags)
      throws IOException {
    List<String> flags = new ArrayList<>(JVM_FLAGS);
    if (shape.quickStart) {
      flags.add("-XX:TieredStopAtLevel=1"); // quick to start, nothing timed
    }
    flags.addAll(extraFlags);
    ChildJvm child =
        ChildJvm.launcher(name, mainClass)
            .smallJvm(false) // heaps, compilers and collectors as the benchmark sets them
            .jvmFlags(flags)
            .libraryPath(libraryPath)
            .tmpDir(Files.createDirectories(tree.resolve("tmp")))
            .workingDir(tree)
            .property("log4j.configuration", conf.resolve("log4j.properties").toUri().toString())
            .property(
                "log4j2.configurationFile", conf.resolve("log4j2.properties").toUri().toString())
            .classpath(conf + File.pathSeparator + classpath)
            .args(args)
            .log(log)
            .setpriv(setpriv)
            .start();
    children.add(child);
    return child;
  }

  private Map<String, String> commonHdfsSite() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("fs.defaultFS", uri().toString());
    m.put("dfs.replication", "1");
    m.put("dfs.blocksize", String.valueOf(shape.blockSize));
    m.put("dfs.heartbeat.interval", "1");
    m.put("dfs.datanode.du.reserved", "0");
    return m;
  }

  private static Path writeConf(Path dir, Map<String, String> site, String fileName)
      throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(fileName), ClusterTree.siteXml(site));
    if (!fileName.equals("core-site.xml") && site.containsKey("fs.defaultFS")) {
      Files.writeString(
          dir.resolve("core-site.xml"),
          ClusterTree.siteXml(Map.of("fs.defaultFS", site.get("fs.defaultFS"))));
    }
    Files.writeString(
        dir.resolve("log4j.properties"),
        ClusterTree.log4jProperties("INFO", ClusterTree.QUIET_HDFS_LOGGERS));
    Files.writeString(
        dir.resolve("log4j2.properties"),
        "status = warn\n"
            + "appender.console.type = Console\n"
            + "appender.console.name = STDERR\n"
            + "appender.console.target = SYSTEM_ERR\n"
            + "appender.console.layout.type = PatternLayout\n"
            + "appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p [%t] %c{2}: %m%n\n"
            + "rootLogger = INFO,STDERR\n"
            + "logger.clienttrace.name = org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace\n"
            + "logger.clienttrace.level = WARN\n"
            + "logger.statechange.name = org.apache.hadoop.hdfs.StateChange\n"
            + "logger.statechange.level = WARN\n"
            + "logger.blockstatechange.name = BlockStateChange\n"
            + "logger.blockstatechange.level = WARN\n");
    return dir;
  }

  private static JsonNode jmx(int httpPort, String query) throws IOException {
    URL url = new URL("http://127.0.0.1:" + httpPort + "/jmx?qry=" + query);
    HttpURLConnection c = (HttpURLConnection) url.openConnection();
    c.setConnectTimeout(10_000);
    c.setReadTimeout(30_000);
    try (InputStream in = c.getInputStream()) {
      return JSON.readTree(in).path("beans");
    } finally {
      c.disconnect();
    }
  }

  private static int[] freePorts(int n) throws IOException {
    return ClusterTree.freePorts(InetAddress.getByName("127.0.0.1"), n);
  }

  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (admin != null) {
        admin.close();
      }
    } finally {
      children.forEach(ChildJvm::kill);
      ClusterTree.deleteUnlessKept("scr.bench.keep", "hbase-bench", socketDir, tree);
    }
  }
}
