package io.scr.reliability;

import io.scr.testing.ChildJvm;
import io.scr.testing.ClusterTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * HDFS as separate processes on this host, for failover tests: a NameNode and three DataNodes, each
 * its own JVM, run as the current user (no root, no sudo, no user switch). The client is the test
 * JVM.
 *
 * <p><b>One local and two "remote" DataNodes.</b> The client's DataNode listens on 127.0.0.1 and
 * serves short-circuit reads on a socket ({@link LocalMode}); the other two bind every address
 * ({@code dfs.datanode.address}, {@code .http.address}, {@code .ipc.address}) to 127.0.0.2 and
 * 127.0.0.3, register under that name ({@code dfs.datanode.hostname}, the NameNode's {@code
 * dfs.namenode.datanode.registration.ip-hostname-check=false}) and start their outgoing connections
 * from it ({@link BoundSocketFactory}), because the NameNode records the address a DataNode
 * registers from. The NameNode therefore lists the 127.0.0.1 DataNode first for this client, as a
 * real cluster lists the client's own host first. The remote DataNodes have no short-circuit
 * socket: scr treats every loopback address as local, finds no socket for their ports and reads
 * them over TCP, as it would a remote host.
 *
 * <p><b>Files.</b> Everything lives under {@code java.io.tmpdir} (the build's {@code target/tmp}):
 * configuration directories, data directories, logs, and the socket directory, which must pass the
 * socket path rules of stock libhadoop and the shim (every component owned by root or the current
 * user, writable by nobody else; else set {@code -Dscr.it.socketBase}). Children run with the test
 * JVM's class path and a configuration directory first on it; a stock DataNode in mode A gets
 * libhadoop from the build's {@code target/native} (io.trino.hadoop:hadoop-apache), the others an
 * empty {@code java.library.path}.
 *
 * <p><b>Children die with the test.</b> {@link #close()} kills every child and deletes the trees;
 * the launcher ({@link ChildJvm}) kills what is left at JVM exit, and children started through
 * {@code setpriv --pdeathsig KILL} (when installed) also die when the thread that started them
 * does, even if this JVM is killed. Start children from the test's own thread.
 *
 * <p>Not thread-safe: one instance per test class, driven from the test thread. {@link DataNode}
 * signals may be sent from any thread.
 */
final class ProcessHdfs implements AutoCloseable {
  /** What serves short-circuit reads on the local DataNode. */
  enum LocalMode {
    /** Mode A: a stock DataNode with libhadoop and {@code dfs.domain.socket.path}. */
    STOCK,
    /** Mode B: the scr shim plugin ({@code dfs.datanode.plugins}), no libhadoop. */
    SHIM
  }

  private static final Duration START_TIMEOUT = Duration.ofMinutes(2);

  private final LocalMode mode;
  private final int blockSize;
  private final Path tree;
  private final Path socketDir;

  /**
   * Null when the socket directory passes the socket path rules up to {@code /}; otherwise why not,
   * and the local DataNode skips the check above the socket directory: the shim trusts its parent
   * (the test build of the plugin, {@code TempDirShimPlugin}), a stock DataNode starts through
   * {@link RelaxedDataNode} ({@code DomainSocket.disableBindPathValidation()}).
   */
  private final String relaxedCheck;

  private final Path nativeDir;
  private final Path noNativeDir;
  private final boolean setpriv;
  private final int nameNodePort;
  private final List<DataNode> dataNodes = new ArrayList<>();

  /** Every child this cluster started, killed by {@link #close()}. */
  private final List<ChildJvm> children = new ArrayList<>();

  private ChildJvm nameNode;
  private DistributedFileSystem admin;
  private boolean closed;

  /** One DataNode JVM: its address, ports, directories and the process currently running it. */
  final class DataNode {
    final String name;
    final String ip;
    final boolean local;
    final int xferPort;
    final int httpPort;
    final int ipcPort;
    final Path home;
    private ChildJvm process;
    private int starts;

    private DataNode(String name, String ip, boolean local) throws IOException {
      this.name = name;
      this.ip = ip;
      this.local = local;
      int[] ports = freePorts(ip, 3);
      this.xferPort = ports[0];
      this.httpPort = ports[1];
      this.ipcPort = ports[2];
      this.home = Files.createDirectories(tree.resolve(name));
    }

    /** The pid of the JVM running this DataNode now. */
    long pid() {
      return process.pid();
    }

    boolean isAlive() {
      return process.isAlive();
    }

    /** The short-circuit socket, {@code _PORT} resolved (the local DataNode only). */
    Path socket() {
      return Paths.get(socketTemplate().replace("_PORT", String.valueOf(xferPort)));
    }

    /** SIGSTOP: the process hangs (a long GC pause, a stuck disk) with every socket open. */
    void stop() {
      signal("STOP");
    }

    /** SIGCONT after {@link #stop()}. */
    void resume() {
      signal("CONT");
    }

    /** SIGKILL, waits until the process is gone. */
    void kill() throws InterruptedException {
      process.process.destroyForcibly();
      if (!process.process.waitFor(30, TimeUnit.SECONDS)) {
        throw new AssertionError(this + " survived SIGKILL");
      }
    }

    /** SIGTERM (an orderly shutdown, as a rolling restart does), waits until it exits. */
    void terminate() throws InterruptedException {
      if (!process.terminate(Duration.ofSeconds(60))) {
        throw new AssertionError(
            this + " did not exit within 60 s of SIGTERM" + process.describe());
      }
    }

    /**
     * Starts the DataNode again (same ports and data) after {@link #kill()} or {@link
     * #terminate()}.
     */
    void restart() throws IOException {
      if (process.isAlive()) {
        throw new IllegalStateException(this + " is still running");
      }
      launch();
    }

    /** Waits until it is live at the NameNode and, when local, serves its socket again. */
    void awaitServing() throws IOException, InterruptedException {
      awaitDataNode(this);
    }

    /** Every op 87 (short-circuit fd request) waits {@code delay} from now on; zero: no delay. */
    void delayFdRequests(Duration delay) throws IOException {
      Files.writeString(home.resolve("op87-delay-ms"), Long.toString(delay.toMillis()));
    }

    private void signal(String sig) {
      try {
        Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(pid())).start();
        if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
          throw new AssertionError("kill -" + sig + " " + pid() + " failed");
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted sending SIG" + sig, e);
      }
    }

    private void launch() throws IOException {
      Map<String, String> hdfs = commonHdfsSite();
      hdfs.put("dfs.datanode.data.dir", home.resolve("data").toUri().toString());
      hdfs.put("dfs.datanode.address", ip + ":" + xferPort);
      hdfs.put("dfs.datanode.http.address", ip + ":" + httpPort);
      hdfs.put("dfs.datanode.ipc.address", ip + ":" + ipcPort);
      hdfs.put("dfs.datanode.hostname", ip);
      hdfs.put("dfs.datanode.fsdataset.factory", SlowDatasetFactory.class.getName());
      Map<String, String> core = new LinkedHashMap<>();
      Map<String, String> props = new LinkedHashMap<>();
      props.put(SlowDatasetFactory.DELAY_FILE_PROPERTY, home.resolve("op87-delay-ms").toString());
      Path libraryPath = noNativeDir;
      if (local) {
        if (mode == LocalMode.SHIM) {
          // The test build of the plugin trusts the parent of the socket directory.
          hdfs.put(
              "dfs.datanode.plugins",
              relaxedCheck != null ? "io.scr.shim.TempDirShimPlugin" : "io.scr.shim.ScrShimPlugin");
          hdfs.put("scr.shim.socket.path", socketTemplate());
        } else {
          // a stock DataNode binds its socket only with short-circuit on in its own configuration
          hdfs.put("dfs.client.read.shortcircuit", "true");
          hdfs.put("dfs.domain.socket.path", socketTemplate());
          libraryPath = nativeDir;
        }
      } else {
        core.put("hadoop.rpc.socket.factory.class.default", BoundSocketFactory.class.getName());
        props.put(BoundSocketFactory.BIND_PROPERTY, ip);
      }
      starts++;
      String logName = name + (starts == 1 ? "" : "-" + starts);
      Path conf = writeConf(home.resolve("conf-" + starts), core, hdfs);
      Path log = tree.resolve("logs").resolve(logName + ".log");
      process =
          ProcessHdfs.this.launch(
              logName,
              conf,
              libraryPath,
              props,
              local && mode == LocalMode.STOCK && relaxedCheck != null
                  ? RelaxedDataNode.class.getName()
                  : "org.apache.hadoop.hdfs.server.datanode.DataNode",
              List.of(),
              log);
    }

    @Override
    public String toString() {
      return name + " (" + ip + ":" + xferPort + (local ? ", local, " + mode : "") + ")";
    }
  }

  private ProcessHdfs(LocalMode mode, int blockSize) throws IOException {
    this.mode = mode;
    this.blockSize = blockSize;
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir")).toAbsolutePath();
    Files.createDirectories(tmp);
    this.tree = Files.createTempDirectory(tmp, "process-hdfs-");
    SocketDir sockets = createSocketDir();
    this.socketDir = sockets.dir;
    this.relaxedCheck = sockets.relaxed;
    this.nativeDir = io.scr.testing.StockNative.nativeDir();
    this.noNativeDir = Files.createDirectories(tree.resolve("no-native"));
    this.setpriv = ChildJvm.onPath("setpriv");
    this.nameNodePort = freePorts("127.0.0.1", 1)[0];
  }

  /**
   * Formats and starts a NameNode and three DataNodes (the local one in {@code mode}, blocks of
   * {@code blockSize} bytes by default) and waits until every DataNode is live at the NameNode
   * under its own address and the local one serves its socket.
   */
  static ProcessHdfs start(LocalMode mode, int blockSize) throws IOException, InterruptedException {
    ProcessHdfs h = new ProcessHdfs(mode, blockSize);
    try {
      if (mode == LocalMode.STOCK && !Files.isRegularFile(h.nativeDir.resolve("libhadoop.so"))) {
        throw new IllegalStateException(
            "no libhadoop.so in "
                + h.nativeDir
                + ": mode A needs the build's unpack-stock-libhadoop execution (run through Maven)");
      }
      h.startNameNode();
      h.dataNodes.add(h.new DataNode("dn-local", "127.0.0.1", true));
      h.dataNodes.add(h.new DataNode("dn-remote-2", "127.0.0.2", false));
      h.dataNodes.add(h.new DataNode("dn-remote-3", "127.0.0.3", false));
      for (DataNode dn : h.dataNodes) {
        dn.launch(); // in parallel
      }
      for (DataNode dn : h.dataNodes) {
        h.awaitDataNode(dn);
      }
      return h;
    } catch (IOException | RuntimeException | InterruptedException | Error e) {
      h.close();
      throw e;
    }
  }

  LocalMode mode() {
    return mode;
  }

  /** Null when the local DataNode runs the full socket path check; otherwise why it does not. */
  String relaxedSocketPathCheck() {
    return relaxedCheck;
  }

  URI uri() {
    return URI.create("hdfs://127.0.0.1:" + nameNodePort);
  }

  /** The client's DataNode (127.0.0.1, short-circuit socket). */
  DataNode local() {
    return dataNodes.get(0);
  }

  List<DataNode> dataNodes() {
    return List.copyOf(dataNodes);
  }

  /** The socket path template ({@code _PORT}) a client configures for the local DataNode. */
  String socketTemplate() {
    return socketDir
        .resolve(mode == LocalMode.SHIM ? "scr._PORT.sock" : "dn._PORT.sock")
        .toString();
  }

  /**
   * A client configuration for this cluster: {@code fs.defaultFS}, the block size, and the local
   * socket under the key this mode's clients read ({@code dfs.domain.socket.path} in mode A, {@code
   * scr.client.socket.paths} in mode B). Short-circuit and scr are for the caller to turn on.
   */
  Configuration clientConf() {
    Configuration c = new Configuration();
    c.set("fs.defaultFS", uri().toString());
    c.setLong("dfs.blocksize", blockSize);
    c.setInt("ipc.client.connect.max.retries", 1);
    if (mode == LocalMode.SHIM) {
      c.set("scr.client.socket.paths", socketTemplate());
    } else {
      c.set("dfs.domain.socket.path", socketTemplate());
    }
    return c;
  }

  /**
   * Writes {@code data} with replication 3 and checks that every block has a replica on every
   * DataNode, the local one listed first.
   */
  void write(String path, byte[] data) throws IOException {
    write(path, data, blockSize);
  }

  /** As {@link #write(String, byte[])} with blocks of {@code fileBlockSize} bytes. */
  void write(String path, byte[] data, int fileBlockSize) throws IOException {
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    try (FSDataOutputStream out = admin.create(p, true, 4096, (short) 3, fileBlockSize)) {
      out.write(data);
    }
    List<LocatedBlock> blocks =
        admin.getClient().getLocatedBlocks(path, 0, data.length).getLocatedBlocks();
    for (LocatedBlock lb : blocks) {
      DatanodeInfo[] at = lb.getLocations();
      if (at.length != 3) {
        throw new AssertionError(lb.getBlock() + " of " + path + " has " + at.length + " replicas");
      }
    }
  }

  /** A stock file system (no short-circuit, no scr) for writes and reference reads. */
  DistributedFileSystem admin() {
    return admin;
  }

  // ---------------------------------------------------------------- processes

  private void startNameNode() throws IOException, InterruptedException {
    Path home = Files.createDirectories(tree.resolve("namenode"));
    Map<String, String> hdfs = commonHdfsSite();
    hdfs.putAll(ClusterTree.nameNodeSite(home.resolve("name"), nameNodePort));
    hdfs.put("dfs.namenode.datanode.registration.ip-hostname-check", "false");
    // three DataNodes on one busy host: do not refuse targets for their load
    hdfs.put("dfs.namenode.redundancy.considerLoad", "false");
    Path conf = writeConf(home.resolve("conf"), Map.of(), hdfs);
    String main = "org.apache.hadoop.hdfs.server.namenode.NameNode";
    Path formatLog = tree.resolve("logs").resolve("namenode-format.log");
    ChildJvm format =
        launch(
            "namenode-format",
            conf,
            noNativeDir,
            Map.of(),
            main,
            List.of("-format", "-force", "-nonInteractive"),
            formatLog);
    int rc = format.awaitExit(START_TIMEOUT);
    if (rc != 0) {
      throw new AssertionError("hdfs namenode -format exited " + rc + format.describe());
    }
    Path log = tree.resolve("logs").resolve("namenode.log");
    nameNode = launch("namenode", conf, noNativeDir, Map.of(), main, List.of(), log);
    Configuration c = new Configuration();
    c.set("fs.defaultFS", uri().toString());
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.setInt("ipc.client.connect.max.retries", 1);
    c.setInt("ipc.client.connect.retry.interval", 200);
    admin = (DistributedFileSystem) FileSystem.newInstance(uri(), c);
    nameNode.awaitTrue(
        "the NameNode to answer and leave safe mode",
        START_TIMEOUT,
        () -> {
          try {
            return !admin.isInSafeMode();
          } catch (IOException e) {
            return false;
          }
        });
  }

  private void awaitDataNode(DataNode dn) throws IOException, InterruptedException {
    ChildJvm p = dn.process;
    String serving =
        mode == LocalMode.SHIM
            ? "scr shim serving short-circuit reads on " + dn.socket()
            : "Listening on UNIX domain socket: " + dn.socket();
    p.awaitTrue(
        dn + " to be live at the NameNode as " + dn.ip + (dn.local ? " and serve its socket" : ""),
        START_TIMEOUT,
        () -> {
          if (dn.local && !p.logContains(serving)) {
            return false;
          }
          if (!p.logContains("successfully registered with NN")) {
            return false;
          }
          try {
            for (DatanodeInfo info : admin.getDataNodeStats(DatanodeReportType.LIVE)) {
              if (info.getXferPort() == dn.xferPort) {
                if (!info.getIpAddr().equals(dn.ip)) {
                  throw new AssertionError(
                      dn + " registered as " + info.getIpAddr() + ", not " + dn.ip + p.describe());
                }
                return true;
              }
            }
            return false;
          } catch (IOException e) {
            return false;
          }
        });
  }

  private ChildJvm launch(
      String name,
      Path conf,
      Path libraryPath,
      Map<String, String> props,
      String mainClass,
      List<String> args,
      Path log)
      throws IOException {
    Path tmp = Files.createDirectories(tree.resolve("tmp-" + name));
    List<String> inherited = new ArrayList<>();
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-opens") || arg.startsWith("--enable-native-access")) {
        inherited.add(arg);
      }
    }
    ChildJvm.Launcher launcher =
        ChildJvm.launcher(name, mainClass)
            .jvmFlags(inherited)
            .tmpDir(tmp)
            .libraryPath(libraryPath)
            .property("log4j.configuration", conf.resolve("log4j.properties").toUri().toString())
            .classpath(conf + java.io.File.pathSeparator + System.getProperty("java.class.path"))
            .args(args)
            .log(log)
            .setpriv(setpriv);
    props.forEach(launcher::property);
    ChildJvm child = launcher.start();
    children.add(child);
    return child;
  }

  private Map<String, String> commonHdfsSite() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("dfs.replication", "3");
    m.put("dfs.blocksize", String.valueOf(blockSize));
    m.put("dfs.heartbeat.interval", "1");
    m.put("dfs.datanode.du.reserved", "0");
    return m;
  }

  private Path writeConf(Path dir, Map<String, String> coreSite, Map<String, String> hdfsSite)
      throws IOException {
    Files.createDirectories(dir);
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", uri().toString());
    core.put("hadoop.tmp.dir", dir.resolveSibling(dir.getFileName() + "-hadoop-tmp").toString());
    core.putAll(coreSite);
    Files.writeString(dir.resolve("core-site.xml"), ClusterTree.siteXml(core));
    Files.writeString(dir.resolve("hdfs-site.xml"), ClusterTree.siteXml(hdfsSite));
    Files.writeString(
        dir.resolve("log4j.properties"),
        ClusterTree.log4jProperties("INFO", ClusterTree.QUIET_HDFS_LOGGERS));
    return dir;
  }

  private static int[] freePorts(String ip, int n) throws IOException {
    return ClusterTree.freePorts(InetAddress.getByName(ip), n);
  }

  /** The socket directory, and why the socket path check is relaxed (null: it is not). */
  private static final class SocketDir {
    final Path dir;
    final String relaxed;

    SocketDir(Path dir, String relaxed) {
      this.dir = dir;
      this.relaxed = relaxed;
    }
  }

  /**
   * The socket directory: mode 0755 in a parent whose every component is owned by root or the
   * current user and writable by nobody else (stock libhadoop's and the shim's path rules, no
   * sticky-bit exemption), short enough for {@code sun_path}. When no candidate passes (a checkout
   * in a group-writable directory, under {@code /tmp}), the directory goes under {@code
   * java.io.tmpdir} and the local DataNode skips the check on the directories above it (see {@link
   * #relaxedCheck}).
   */
  private static SocketDir createSocketDir() throws IOException {
    List<Path> candidates = new ArrayList<>();
    String override = System.getProperty("scr.it.socketBase");
    if (override != null && !override.isEmpty()) {
      candidates.add(Paths.get(override));
    }
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir")).toAbsolutePath();
    candidates.add(tmp);
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    if (runtime != null && !runtime.isEmpty()) {
      candidates.add(Paths.get(runtime));
    }
    int uid = (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
    List<String> rejected = new ArrayList<>();
    for (Path c : candidates) {
      String problem = ClusterTree.socketPathProblem(c, uid);
      if (problem == null && c.toString().length() < 70) {
        return new SocketDir(newSocketDir(c), null);
      }
      rejected.add(c + ": " + (problem == null ? "too long for sun_path" : problem));
    }
    String why =
        "no directory passes the socket path rules (every component owned by root or uid "
            + uid
            + ", writable by nobody else): "
            + rejected
            + "; the local DataNode's check skips the directories above its socket directory"
            + " (pass -Dscr.it.socketBase=<such a directory> for the full check)";
    System.err.println("ProcessHdfs: " + why);
    return new SocketDir(newSocketDir(tmp), why);
  }

  private static Path newSocketDir(Path parent) throws IOException {
    Path dir = Files.createTempDirectory(parent, "phdfs-");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    return dir;
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
      ClusterTree.deleteUnlessKept("scr.it.keep", "ProcessHdfs", tree, socketDir);
    }
  }
}
