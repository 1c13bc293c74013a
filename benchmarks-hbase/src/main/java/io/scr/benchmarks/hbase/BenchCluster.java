package io.scr.benchmarks.hbase;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.scr.core.ScrKeys;
import io.scr.shim.ScrShimKeys;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
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
 * Children are started through {@code setpriv --pdeathsig KILL} when it is installed (they die with
 * the harness even when it is killed) and killed by a shutdown hook otherwise.
 *
 * <p>Not thread-safe: driven from the harness's main thread.
 */
final class BenchCluster implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofMinutes(4);
  private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();
  private static final ObjectMapper JSON = new ObjectMapper();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> LIVE.forEach(Process::destroyForcibly), "hbase-bench-kill-children"));
  }

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
  private final List<Process> children = new ArrayList<>();

  private Process nameNode;
  private Process dataNode;
  private Mode.DataNodeSide dataNodeSide;
  private int dataNodeStarts;
  private Path dataNodeLog;
  private Process hbase;
  private Path hbaseLog;
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
    this.setpriv = onPath("setpriv");
    this.nameNodePort = freePorts(1)[0];
    this.dataNodePorts = freePorts(3);
    this.hbasePorts = freePorts(5);
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
    hdfs.put("dfs.namenode.name.dir", home.resolve("name").toUri().toString());
    hdfs.put("dfs.namenode.rpc-address", "127.0.0.1:" + nameNodePort);
    hdfs.put("dfs.namenode.http-address", "127.0.0.1:0");
    hdfs.put("dfs.namenode.safemode.extension", "0");
    hdfs.put("dfs.namenode.safemode.min.datanodes", "0");
    hdfs.put("dfs.namenode.fs-limits.min-block-size", "0");
    Path conf = writeConf(home.resolve("conf"), hdfs, "hdfs-site.xml");
    String main = "org.apache.hadoop.hdfs.server.namenode.NameNode";
    Path formatLog = tree.resolve("logs/namenode-format.log");
    Process format =
        launch(
            conf,
            noNativeDir,
            main,
            List.of("-format", "-force", "-nonInteractive"),
            formatLog,
            List.of("-Xmx256m"));
    if (!format.waitFor(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS) || format.exitValue() != 0) {
      format.destroyForcibly();
      throw new IllegalStateException("namenode -format failed" + tail(formatLog));
    }
    Path log = tree.resolve("logs/namenode.log");
    nameNode = launch(conf, noNativeDir, main, List.of(), log, List.of("-Xmx384m"));
    Configuration c = new Configuration();
    c.set("fs.defaultFS", uri().toString());
    c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
    c.setInt("ipc.client.connect.max.retries", 1);
    c.setInt("ipc.client.connect.retry.interval", 200);
    admin = (DistributedFileSystem) FileSystem.newInstance(uri(), c);
    awaitTrue(
        "the NameNode to leave safe mode",
        nameNode,
        log,
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
      dataNode.destroy(); // SIGTERM: an orderly shutdown, as a rolling restart does
      if (!dataNode.waitFor(60, TimeUnit.SECONDS)) {
        dataNode.destroyForcibly();
        dataNode.waitFor(30, TimeUnit.SECONDS);
      }
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
    dataNodeLog = tree.resolve("logs/datanode-" + dataNodeStarts + "-" + side + ".log");
    dataNode = launch(conf, libraryPath, main, List.of(), dataNodeLog, List.of("-Xmx512m"));
    dataNodeSide = side;
    Path log = dataNodeLog;
    awaitTrue(
        "the DataNode (" + side + ") to serve its socket and report its blocks",
        dataNode,
        log,
        () ->
            logContains(log, serving)
                && logContains(log, "successfully registered with NN")
                && logContains(log, "Successfully sent block report"));
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
    site.put("hbase.master.info.port", String.valueOf(hbasePorts[2]));
    site.put("hbase.regionserver.port", String.valueOf(hbasePorts[3]));
    site.put("hbase.regionserver.info.port", String.valueOf(hbasePorts[4]));
    site.put("hbase.master.info.bindAddress", "127.0.0.1");
    site.put("hbase.regionserver.info.bindAddress", "127.0.0.1");
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
    hbaseLog = tree.resolve("logs/hbase-" + hbaseStarts + "-" + mode + ".log");
    List<String> flags =
        new ArrayList<>(
            shape.quickStart
                ? List.of("-Xmx512m", "-XX:TieredStopAtLevel=1")
                : List.of("-Xms1536m", "-Xmx1536m"));
    flags.addAll(extraJvmFlags);
    hbase =
        launch(
            conf,
            nativeDir,
            "org.apache.hadoop.hbase.master.HMaster",
            List.of("start"),
            hbaseLog,
            flags);
    Path log = hbaseLog;
    awaitTrue(
        "HBase to start (master, RegionServer, ZooKeeper)",
        hbase,
        log,
        () -> logContains(log, "Master has completed initialization"));
    try (Connection c = ConnectionFactory.createConnection(clientConf());
        Admin a = c.getAdmin()) {
      awaitTrue(
          "the RegionServer to be live and " + HBaseBench.TABLE + " available",
          hbase,
          log,
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

  /** The HBase process's pid. */
  long hbasePid() {
    return hbase.pid();
  }

  Path hbaseLog() {
    return hbaseLog;
  }

  /** The beans of the HBase process matching {@code query} (its info server's /jmx). */
  JsonNode hbaseJmx(String query) throws IOException {
    return jmx(hbasePorts[2], query);
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
      hbase.destroyForcibly();
    }
    if (!hbase.waitFor(120, TimeUnit.SECONDS)) {
      System.err.println("hbase-bench: HBase still running 120 s after shutdown; killing it");
      hbase.destroyForcibly();
      hbase.waitFor(30, TimeUnit.SECONDS);
    }
  }

  // ------------------------------------------------------------------------------------ helpers

  private Process launch(
      Path conf,
      Path libraryPath,
      String mainClass,
      List<String> args,
      Path log,
      List<String> extraFlags)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    if (setpriv) {
      cmd.addAll(List.of("setpriv", "--pdeathsig", "KILL", "--"));
    }
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    if (shape.quickStart) {
      cmd.add("-XX:TieredStopAtLevel=1"); // quick to start, nothing timed
    }
    cmd.addAll(extraFlags);
    cmd.add("-Djava.library.path=" + libraryPath);
    cmd.add("-Djava.io.tmpdir=" + Files.createDirectories(tree.resolve("tmp")));
    cmd.add("-Dlog4j.configuration=" + conf.resolve("log4j.properties").toUri());
    cmd.add("-Dlog4j2.configurationFile=" + conf.resolve("log4j2.properties").toUri());
    cmd.add("-cp");
    cmd.add(conf + File.pathSeparator + classpath);
    cmd.add(mainClass);
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(tree.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("HADOOP_") || k.startsWith("HBASE_"));
    pb.environment().remove("CLASSPATH");
    pb.environment().remove("JAVA_TOOL_OPTIONS");
    Files.createDirectories(log.getParent());
    pb.redirectErrorStream(true).redirectOutput(log.toFile());
    pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    Process p = pb.start();
    LIVE.add(p);
    var unused = p.onExit().thenRun(() -> LIVE.remove(p));
    children.add(p);
    return p;
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
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    site.forEach(
        (k, v) ->
            sb.append("  <property><name>")
                .append(k)
                .append("</name><value>")
                .append(v.replace("&", "&amp;").replace("<", "&lt;"))
                .append("</value></property>\n"));
    sb.append("</configuration>\n");
    Files.writeString(dir.resolve(fileName), sb.toString());
    if (!fileName.equals("core-site.xml") && site.containsKey("fs.defaultFS")) {
      Files.writeString(
          dir.resolve("core-site.xml"),
          "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>fs.defaultFS</name><value>"
              + site.get("fs.defaultFS")
              + "</value></property>\n</configuration>\n");
    }
    Files.writeString(
        dir.resolve("log4j.properties"),
        "log4j.rootLogger=INFO, err\n"
            + "log4j.appender.err=org.apache.log4j.ConsoleAppender\n"
            + "log4j.appender.err.target=System.err\n"
            + "log4j.appender.err.layout=org.apache.log4j.PatternLayout\n"
            + "log4j.appender.err.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p [%t] %c{2}: %m%n\n"
            + "log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN\n"
            + "log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN\n"
            + "log4j.logger.BlockStateChange=WARN\n");
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

  /** A start-up condition. */
  private interface Condition {
    boolean holds() throws IOException;
  }

  private static void awaitTrue(String what, Process child, Path log, Condition condition)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    while (!condition.holds()) {
      if (!child.isAlive()) {
        throw new IllegalStateException(
            "exited (" + child.exitValue() + ") while waiting for " + what + tail(log));
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "timed out after " + START_TIMEOUT + " waiting for " + what + tail(log));
      }
      Thread.sleep(200); // start-up progress shows only in logs and RPC answers
    }
  }

  private static boolean logContains(Path log, String fragment) {
    try {
      if (!Files.exists(log)) {
        return false;
      }
      try (Stream<String> lines = Files.lines(log, StandardCharsets.ISO_8859_1)) {
        return lines.anyMatch(l -> l.contains(fragment));
      }
    } catch (IOException | UncheckedIOException e) {
      return false;
    }
  }

  /** The last lines of a log, for failure messages. */
  static String tail(Path log) {
    StringBuilder sb = new StringBuilder("\n--- last lines of ").append(log).append(" ---\n");
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.ISO_8859_1);
      for (String l : lines.subList(Math.max(0, lines.size() - 40), lines.size())) {
        sb.append(l).append('\n');
      }
    } catch (IOException e) {
      sb.append("<cannot read: ").append(e).append(">\n");
    }
    return sb.toString();
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
    List<ServerSocket> open = new ArrayList<>();
    try {
      int[] out = new int[n];
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
        open.add(s);
        out[i] = s.getLocalPort();
      }
      return out;
    } finally {
      for (ServerSocket s : open) {
        s.close();
      }
    }
  }

  private static boolean onPath(String command) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (Files.isExecutable(Path.of(dir, command))) {
        return true;
      }
    }
    return false;
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
      for (Process p : children) {
        p.destroyForcibly();
      }
      for (Process p : children) {
        try {
          p.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (Boolean.getBoolean("scr.bench.keep")) {
        System.err.println("hbase-bench: kept " + tree);
      } else {
        deleteRecursively(socketDir);
        deleteRecursively(tree);
      }
    }
  }

  private static void deleteRecursively(Path p) throws IOException {
    if (p == null || !Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path f : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(f);
      }
    }
  }
}
