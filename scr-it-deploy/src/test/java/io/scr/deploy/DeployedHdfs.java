package io.scr.deploy;

import io.scr.testing.ChildJvm;
import io.scr.testing.ClusterTree;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.PrivilegedExceptionAction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * HDFS deployed the way operators run it, for the deployment tests: a NameNode and DataNodes, each
 * a separate JVM started from the Hadoop jars with the main class {@code hdfs namenode} / {@code
 * hdfs datanode} run, each with its own configuration directory first on its classpath (what {@code
 * HADOOP_CONF_DIR} does), and clients in JVMs of their own.
 *
 * <p><b>Users.</b> Run as root (as CI runs), the NameNode and DataNodes run as the dedicated user
 * {@value #DATANODE_USER} and clients as {@value #CLIENT_USER} (both created with {@code useradd}
 * when missing), switched with {@code setpriv}. Run as anyone else, every process runs as the
 * current user through the same code (the same {@code setpriv} launcher without the switch), and
 * {@link #degradation()} says what that leaves untested.
 *
 * <p><b>Files.</b> Whatever a child reads must be readable by its user, while a CI checkout or
 * {@code ~/.m2} may be 0700: the Hadoop jars (hard links where possible), the bundles, the client
 * class, libhadoop and every configuration directory live in a fresh world-readable tree under
 * {@code /tmp}. Data directories belong to the DataNode user, mode 0700.
 *
 * <p><b>Sockets.</b> Each DataNode has a socket directory of its own, owned by the DataNode user,
 * mode 0755, whose every parent is owned by root (or the DataNode user) and writable by nobody else
 * — the layout stock's {@code DomainSocket.validateSocketPathSecurity0} and the shim demand, with
 * the check on (no test-only skip key). As root it lives under {@code /run}; otherwise under the
 * first candidate ({@code $XDG_RUNTIME_DIR}, {@code java.io.tmpdir}, the home directory, or {@code
 * -Dscr.it.deploy.socketBase}) that passes the rules.
 *
 * <p>{@link #close()} kills every child, closes the admin file system and deletes both trees. Not
 * thread-safe; one instance per test class.
 */
final class DeployedHdfs implements AutoCloseable {
  static final String DATANODE_USER = "scr-it-dn";
  static final String CLIENT_USER = "scr-it-client";
  static final int BLOCK_SIZE = 1 << 20;

  /** The flags the root pom gives test JVMs: Hadoop reflects into these packages on JDK 17. */
  private static final List<String> JDK17_FLAGS =
      List.of(
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
          "--add-opens=java.base/java.io=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.net=ALL-UNNAMED");

  private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
  private static final Pattern COLON = Pattern.compile(":");
  private static final Pattern BYTES_READ = Pattern.compile("\"BytesRead\"\\s*:\\s*(\\d+)");

  /** A Unix user a child runs as. */
  static final class User {
    final String name;
    final int uid;
    final int gid;

    User(String name, int uid, int gid) {
      this.name = name;
      this.uid = uid;
      this.gid = gid;
    }

    @Override
    public String toString() {
      return name + " (uid " + uid + ")";
    }
  }

  /** One DataNode: its ports, directories and the JVM currently running it. */
  static final class DataNode {
    final String name;
    final boolean shim;
    final int xferPort;
    final int httpPort;
    final Path home;
    final Path socketDir;
    final String socketTemplate;
    ChildJvm process;
    int starts;

    DataNode(String name, boolean shim, int xferPort, int httpPort, Path home, Path socketDir) {
      this.name = name;
      this.shim = shim;
      this.xferPort = xferPort;
      this.httpPort = httpPort;
      this.home = home;
      this.socketDir = socketDir;
      this.socketTemplate = socketDir.resolve(shim ? "scr._PORT.sock" : "dn._PORT.sock").toString();
    }

    /** The socket file, {@code _PORT} resolved. */
    Path socket() {
      return Paths.get(socketTemplate.replace("_PORT", String.valueOf(xferPort)));
    }

    /** The line the DataNode logs once it serves short-circuit requests on its socket. */
    String servingLine() {
      return shim
          ? "scr shim serving short-circuit reads on " + socket()
          : "Listening on UNIX domain socket: " + socket();
    }

    @Override
    public String toString() {
      return name + (shim ? " (shim" : " (stock") + ", xfer port " + xferPort + ")";
    }
  }

  private final User dataNodeUser;
  private final User clientUser;
  private final String degradation;
  private final boolean setpriv;
  private final Path tree;
  private final Path socketBase;
  private final List<Path> hadoopJars = new ArrayList<>();
  private final Path clientBundle;
  private final Path shimBundle;
  private final Path clientClasses;
  private final Path nativeDir;
  private final Path noNativeDir;
  private final Path javaBin;
  private final int nameNodePort;
  private ChildJvm nameNode;
  private DistributedFileSystem admin;
  private boolean closed;

  private DeployedHdfs() throws IOException, InterruptedException {
    boolean root = currentUid() == 0;
    setpriv = ChildJvm.onPath("setpriv");
    String why = null;
    User me = currentUser();
    if (Boolean.getBoolean("scr.it.deploy.singleUser")) {
      why =
          "-Dscr.it.deploy.singleUser=true: the NameNode, DataNodes and clients all run as "
              + me
              + "; the user boundary and a socket directory the client cannot list are not"
              + " exercised";
    } else if (!root) {
      why =
          "not running as root: the NameNode, DataNodes and clients all run as "
              + me
              + "; the user boundary (DataNode user vs client user) and a socket directory the"
              + " client cannot list are not exercised";
    } else if (!setpriv) {
      why = "setpriv (util-linux) is not on the PATH: every process runs as " + me;
    }
    if (why == null) {
      why = unreadableByOthers(Paths.get(System.getProperty("java.home"), "bin", "java"));
    }
    User dn = me;
    User client = me;
    if (why == null) {
      try {
        dn = ensureUser(DATANODE_USER);
        client = ensureUser(CLIENT_USER);
      } catch (IOException | IllegalStateException e) {
        why = "cannot create the test users (" + e.getMessage() + "): every process runs as " + me;
        dn = me;
        client = me;
      }
    }
    dataNodeUser = dn;
    clientUser = client;
    degradation = why;
    if (degradation != null) {
      System.err.println("scr-it-deploy: DEGRADED: " + degradation);
    }
    tree = Files.createTempDirectory(Paths.get("/tmp"), "scr-it-deploy-");
    chmod(tree, "rwxr-xr-x");
    socketBase = createSocketBase(root);
    try {
      Path lib = Files.createDirectories(tree.resolve("lib"));
      for (String entry : readHadoopClasspath()) {
        Path jar = Paths.get(entry);
        if (jar.getFileName().toString().endsWith("-tests.jar")) {
          if (jar.getFileName().toString().startsWith("hadoop-hdfs-")) {
            unpackWebapps(jar, tree.resolve("share-hadoop-hdfs"));
            hadoopJars.add(tree.resolve("share-hadoop-hdfs"));
          }
          continue;
        }
        Path link = lib.resolve(hadoopJars.size() + "-" + jar.getFileName());
        linkOrCopy(jar, link);
        hadoopJars.add(link);
      }
      clientBundle =
          linkOrCopy(bundle("scr.it.deploy.clientBundle"), tree.resolve("scr-bundle-client.jar"));
      shimBundle =
          linkOrCopy(bundle("scr.it.deploy.shimBundle"), tree.resolve("scr-bundle-shim.jar"));
      clientClasses = copyClientClasses();
      nativeDir = Files.createDirectories(tree.resolve("native"));
      Path libhadoop = Paths.get(System.getProperty("scr.native.dir"), "libhadoop.so");
      if (!Files.isRegularFile(libhadoop)) {
        throw new IllegalStateException(
            libhadoop
                + " is missing: the build's unpack-stock-libhadoop execution extracts it from"
                + " io.trino.hadoop:hadoop-apache (run through Maven)");
      }
      Files.copy(libhadoop, nativeDir.resolve("libhadoop.so"));
      noNativeDir = Files.createDirectories(tree.resolve("no-native"));
      javaBin = Paths.get(System.getProperty("java.home"), "bin", "java");
      nameNodePort = freePorts(1)[0];
    } catch (IOException | RuntimeException e) {
      deleteTrees();
      throw e;
    }
  }

  /** Prepares users and directories; {@link #startNameNode()} starts HDFS. */
  static DeployedHdfs create() throws IOException, InterruptedException {
    return new DeployedHdfs();
  }

  /** Null when processes run as separate users; otherwise what is not exercised, and why. */
  String degradation() {
    return degradation;
  }

  User dataNodeUser() {
    return dataNodeUser;
  }

  User clientUser() {
    return clientUser;
  }

  ChildJvm nameNode() {
    return nameNode;
  }

  // ---------------------------------------------------------------- processes

  /** Formats ({@code hdfs namenode -format}) and starts the NameNode; waits until it is usable. */
  void startNameNode() throws IOException, InterruptedException {
    Path home = Files.createDirectories(tree.resolve("namenode"));
    Path name = ownedDir(home.resolve("name"), dataNodeUser);
    Map<String, String> hdfs = commonHdfsSite();
    hdfs.putAll(ClusterTree.nameNodeSite(name, nameNodePort));
    hdfs.put("dfs.namenode.datanode.registration.ip-hostname-check", "false");
    hdfs.put("dfs.permissions.enabled", "true");
    Path conf = writeConf(home, "namenode", dataNodeUser, hdfs, "INFO");
    String main = "org.apache.hadoop.hdfs.server.namenode.NameNode";
    ChildJvm format =
        launch(
            "namenode-format",
            dataNodeUser,
            classpath(conf, List.of()),
            noNativeDir,
            home,
            main,
            List.of("-format", "-force", "-nonInteractive"),
            false);
    int rc = format.awaitExit(START_TIMEOUT);
    if (rc != 0) {
      throw new AssertionError("hdfs namenode -format exited " + rc + format.describe());
    }
    nameNode =
        launch(
            "namenode",
            dataNodeUser,
            classpath(conf, List.of()),
            noNativeDir,
            home,
            main,
            List.of(),
            false);
    Configuration c = adminConf();
    try {
      admin =
          UserGroupInformation.createRemoteUser(dataNodeUser.name)
              .doAs(
                  (PrivilegedExceptionAction<DistributedFileSystem>)
                      () -> (DistributedFileSystem) FileSystem.newInstance(uri(), c));
    } catch (IOException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException(e);
    }
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

  URI uri() {
    return URI.create("hdfs://127.0.0.1:" + nameNodePort);
  }

  /**
   * Creates and launches a DataNode (stock with libhadoop, or without libhadoop and the shim);
   * {@link #awaitDataNode} waits until it serves. Launch several first: they start in parallel.
   */
  DataNode startDataNode(String name, boolean shim) throws IOException {
    return startDataNode(name, shim, "rwxr-xr-x");
  }

  /**
   * Like {@link #startDataNode(String, boolean)} with the socket directory at {@code socketDirMode}
   * (e.g. {@code rwxrwxrwx}: a layout the path check must refuse).
   */
  DataNode startDataNode(String name, boolean shim, String socketDirMode) throws IOException {
    int[] ports = freePorts(2);
    Path home = Files.createDirectories(tree.resolve(name));
    Path sockets = ownedDir(socketBase.resolve(name), dataNodeUser);
    chmod(sockets, socketDirMode);
    DataNode dn = new DataNode(name, shim, ports[0], ports[1], home, sockets);
    ownedDir(home.resolve("data"), dataNodeUser);
    start(dn);
    return dn;
  }

  /** Waits until {@code dn} serves its socket and the NameNode lists it as live. */
  void awaitDataNode(DataNode dn) throws IOException, InterruptedException {
    awaitServing(dn);
    dn.process.awaitTrue(
        dn + " to be live at the NameNode",
        START_TIMEOUT,
        () -> {
          try {
            for (DatanodeInfo info : admin.getDataNodeStats(DatanodeReportType.LIVE)) {
              if (info.getXferPort() == dn.xferPort) {
                return true;
              }
            }
            return false;
          } catch (IOException e) {
            return false;
          }
        });
  }

  private void start(DataNode dn) throws IOException {
    Map<String, String> hdfs = commonHdfsSite();
    hdfs.put("dfs.datanode.data.dir", dn.home.resolve("data").toUri().toString());
    hdfs.put("dfs.datanode.address", "127.0.0.1:" + dn.xferPort);
    hdfs.put("dfs.datanode.http.address", "127.0.0.1:" + dn.httpPort);
    hdfs.put("dfs.datanode.ipc.address", "127.0.0.1:0");
    if (dn.shim) {
      // docs/user-guide.md section 3: the plugin and its socket; no dfs.domain.socket.path.
      hdfs.put("dfs.datanode.plugins", "io.scr.shim.ScrShimPlugin");
      hdfs.put("scr.shim.socket.path", dn.socketTemplate);
    } else {
      // Mode A: a stock DataNode binds its socket only with short-circuit on in its own config.
      hdfs.put("dfs.client.read.shortcircuit", "true");
      hdfs.put("dfs.domain.socket.path", dn.socketTemplate);
    }
    Path conf = writeConf(dn.home, "conf", dataNodeUser, hdfs, "INFO");
    // Metrics snapshots for JMX live period+1 ms: 1 s instead of 10 s keeps polls short.
    Files.writeString(conf.resolve("hadoop-metrics2.properties"), "*.period=1\n");
    dn.starts++;
    dn.process =
        launch(
            dn.name + (dn.starts == 1 ? "" : "-" + dn.starts),
            dataNodeUser,
            classpath(conf, dn.shim ? List.of(shimBundle) : List.of()),
            dn.shim ? noNativeDir : nativeDir,
            dn.home,
            "org.apache.hadoop.hdfs.server.datanode.DataNode",
            List.of(),
            false);
  }

  /** The log of the DataNode's current JVM says it registered and serves its socket. */
  private static void awaitServing(DataNode dn) throws IOException, InterruptedException {
    ChildJvm p = dn.process;
    p.awaitTrue(
        dn + " to register and serve its socket (log: '" + dn.servingLine() + "')",
        START_TIMEOUT,
        () -> p.logContains("successfully registered with NN") && p.logContains(dn.servingLine()));
  }

  /** kill -9 the DataNode's JVM, then start it again with the same configuration and ports. */
  void killAndRestart(DataNode dn) throws IOException, InterruptedException {
    dn.process.kill();
    if (dn.process.isAlive()) {
      throw new AssertionError(dn + " survived SIGKILL");
    }
    start(dn);
    awaitServing(dn);
  }

  /**
   * Starts a client JVM as the client user: {@link DeployClient} with {@code args}, its own
   * configuration directory holding {@code hdfsSite} (plus fs.defaultFS in core-site.xml), the
   * client bundle on the classpath when {@code scrBundle}, and libhadoop on {@code
   * java.library.path} only when {@code libhadoop}.
   */
  ChildJvm startClient(
      String name,
      Map<String, String> hdfsSite,
      boolean scrBundle,
      boolean libhadoop,
      List<String> args)
      throws IOException {
    Path home = Files.createDirectories(tree.resolve("client-" + name));
    Path conf = writeConf(home, "conf", clientUser, new LinkedHashMap<>(hdfsSite), "WARN");
    List<Path> extra = new ArrayList<>();
    extra.add(clientClasses);
    if (scrBundle) {
      extra.add(clientBundle);
    }
    return launch(
        "client-" + name,
        clientUser,
        classpath(conf, extra),
        libhadoop ? nativeDir : noNativeDir,
        home,
        DeployClient.class.getName(),
        args,
        true);
  }

  private ChildJvm launch(
      String name,
      User user,
      List<Path> classpath,
      Path libraryPath,
      Path home,
      String mainClass,
      List<String> args,
      boolean client)
      throws IOException {
    Path tmp = ownedDir(Files.createDirectories(home).resolve("tmp-" + name), user);
    ChildJvm.Launcher launcher =
        ChildJvm.launcher(name, mainClass)
            .javaBin(javaBin)
            .jvmFlags(JDK17_FLAGS)
            .tmpDir(tmp)
            .libraryPath(libraryPath)
            .classpath(classpath)
            .args(args)
            .workingDir(home)
            .environment("HOME", tmp.toString())
            .log(tree.resolve("logs").resolve(name + ".log"))
            .setpriv(setpriv)
            .lineProtocol(client);
    if (degradation == null) {
      launcher.runAs(user.uid, user.gid);
    }
    return launcher.start();
  }

  /** The configuration directory first, then what {@code hdfs} puts there, then {@code extra}. */
  private List<Path> classpath(Path conf, List<Path> extra) {
    List<Path> cp = new ArrayList<>();
    cp.add(conf);
    cp.addAll(extra);
    cp.addAll(hadoopJars);
    return cp;
  }

  // ---------------------------------------------------------------- files and metrics

  /**
   * Writes {@code data} as the HDFS superuser with one replica, on {@code dn} (a favored node), and
   * checks that every block landed there.
   */
  void writeFile(DataNode dn, String path, byte[] data) throws IOException {
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    InetSocketAddress favored =
        new InetSocketAddress(InetAddress.getLoopbackAddress(), dn.xferPort);
    try (FSDataOutputStream out =
        admin.create(
            p,
            FsPermission.getFileDefault(),
            true,
            4096,
            (short) 1,
            BLOCK_SIZE,
            null,
            new InetSocketAddress[] {favored})) {
      out.write(data);
    }
    for (LocatedBlock lb :
        admin.getClient().getLocatedBlocks(path, 0, data.length).getLocatedBlocks()) {
      DatanodeInfo[] at = lb.getLocations();
      if (at.length != 1 || at[0].getXferPort() != dn.xferPort) {
        throw new AssertionError(
            "block "
                + lb.getBlock()
                + " of "
                + path
                + " is on "
                + Arrays.toString(at)
                + ", not "
                + dn);
      }
    }
  }

  /** Reads {@code path} over TCP from this JVM (no short-circuit here); returns the bytes read. */
  long readOverTcp(String path) throws IOException {
    long n = 0;
    byte[] buf = new byte[64 * 1024];
    try (FSDataInputStream in = admin.open(new org.apache.hadoop.fs.Path(path))) {
      for (int r = in.read(buf); r >= 0; r = in.read(buf)) {
        n += r;
      }
    }
    return n;
  }

  /**
   * The DataNode's own {@code BytesRead} (bytes it sent over TCP), from its JMX HTTP endpoint
   * ({@code /jmx}, bean {@code DataNodeActivity-*}). JMX serves a snapshot up to 1 s old here.
   */
  long bytesRead(DataNode dn) throws IOException {
    URL url =
        new URL(
            "http://127.0.0.1:"
                + dn.httpPort
                + "/jmx?qry=Hadoop:service=DataNode,name=DataNodeActivity-*");
    HttpURLConnection c = (HttpURLConnection) url.openConnection();
    c.setConnectTimeout(10_000);
    c.setReadTimeout(10_000);
    try (InputStream in = c.getInputStream()) {
      String body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      Matcher m = BYTES_READ.matcher(body);
      if (!m.find()) {
        throw new IOException("no BytesRead in " + url + ": " + body);
      }
      return Long.parseLong(m.group(1));
    } finally {
      c.disconnect();
    }
  }

  /** Polls {@link #bytesRead} until it reaches {@code atLeast} (JMX snapshots lag); returns it. */
  long awaitBytesRead(DataNode dn, long atLeast) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    long v = bytesRead(dn);
    while (v < atLeast && System.nanoTime() - deadline < 0) {
      Thread.sleep(200); // a JMX snapshot's age has nothing to wait on but time
      v = bytesRead(dn);
    }
    return v;
  }

  // ---------------------------------------------------------------- set-up helpers

  private Map<String, String> commonHdfsSite() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("dfs.replication", "1");
    m.put("dfs.blocksize", String.valueOf(BLOCK_SIZE));
    m.put("dfs.heartbeat.interval", "1");
    return m;
  }

  /** core-site.xml, hdfs-site.xml and log4j.properties in {@code home/dirName}. */
  private Path writeConf(
      Path home, String dirName, User user, Map<String, String> hdfsSite, String rootLevel)
      throws IOException {
    Path conf = Files.createDirectories(home.resolve(dirName));
    chmod(conf, "rwxr-xr-x");
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", uri().toString());
    core.put("hadoop.tmp.dir", ownedDir(home.resolve("hadoop-tmp-" + user.name), user).toString());
    Files.writeString(conf.resolve("core-site.xml"), ClusterTree.siteXml(core));
    Files.writeString(conf.resolve("hdfs-site.xml"), ClusterTree.siteXml(hdfsSite));
    Files.writeString(
        conf.resolve("log4j.properties"),
        ClusterTree.log4jProperties(rootLevel, Map.of("io.scr", "INFO")));
    return conf;
  }

  private Configuration adminConf() {
    Configuration c = new Configuration();
    c.set("fs.defaultFS", uri().toString());
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.setInt("ipc.client.connect.max.retries", 1);
    c.setInt("ipc.client.connect.retry.interval", 200);
    c.setLong("dfs.blocksize", BLOCK_SIZE);
    return c;
  }

  private static List<String> readHadoopClasspath() throws IOException {
    String file = System.getProperty("scr.it.deploy.hadoopClasspath");
    if (file == null || !Files.isRegularFile(Paths.get(file))) {
      throw new IllegalStateException(
          "scr.it.deploy.hadoopClasspath ("
              + file
              + ") is not a file: run through Maven (maven-dependency-plugin build-classpath)");
    }
    List<String> out = new ArrayList<>();
    for (String e : COLON.split(Files.readString(Paths.get(file)).trim(), -1)) {
      if (!e.isEmpty() && e.endsWith(".jar")) {
        out.add(e);
      }
    }
    return out;
  }

  private static Path bundle(String property) {
    Path p = Paths.get(System.getProperty(property, "<unset " + property + ">"));
    if (!Files.isRegularFile(p)) {
      throw new IllegalStateException(
          p
              + " does not exist: build the bundles first (mvn -B -pl scr-it-deploy -am verify"
              + " packages scr-bundle-client and scr-bundle-shim before this module)");
    }
    return p;
  }

  /**
   * The NameNode's and DataNode's web applications, as a distribution's {@code
   * share/hadoop/hdfs/webapps} (Hadoop's Maven artifacts carry them only in the tests jar).
   */
  private static void unpackWebapps(Path testsJar, Path into) throws IOException {
    try (java.util.zip.ZipFile zip = new java.util.zip.ZipFile(testsJar.toFile())) {
      for (java.util.zip.ZipEntry e : java.util.Collections.list(zip.entries())) {
        if (!e.getName().startsWith("webapps/") || e.getName().contains("..")) {
          continue;
        }
        Path to = into.resolve(e.getName());
        if (e.isDirectory()) {
          Files.createDirectories(to);
        } else {
          Files.createDirectories(to.getParent());
          try (InputStream in = zip.getInputStream(e)) {
            Files.copy(in, to);
          }
        }
      }
    }
  }

  /** The client main class (and nothing else of this module) for the client JVMs. */
  private Path copyClientClasses() throws IOException {
    Path testClasses = Paths.get(System.getProperty("scr.it.deploy.testClasses"));
    String pkg = DeployClient.class.getPackageName().replace('.', '/');
    Path to = Files.createDirectories(tree.resolve("client-classes").resolve(pkg));
    try (Stream<Path> s = Files.list(testClasses.resolve(pkg))) {
      for (Path f : (Iterable<Path>) s::iterator) {
        String n = f.getFileName().toString();
        if (n.equals("DeployClient.class") || n.startsWith("DeployClient$")) {
          Files.copy(f, to.resolve(n));
        }
      }
    }
    return tree.resolve("client-classes");
  }

  /** A hard link when the file is world-readable and on the same file system, else a copy. */
  private static Path linkOrCopy(Path from, Path to) throws IOException {
    int mode = (Integer) Files.getAttribute(from, "unix:mode");
    if ((mode & 0004) != 0) {
      try {
        Files.createLink(to, from);
        return to;
      } catch (IOException | UnsupportedOperationException e) {
        // another file system, or links not allowed: copy
      }
    }
    Files.copy(from, to);
    chmod(to, "rw-r--r--");
    return to;
  }

  private Path ownedDir(Path dir, User user) throws IOException {
    Files.createDirectories(dir);
    chmod(dir, "rwx------");
    if (degradation == null) {
      Files.setAttribute(dir, "unix:uid", user.uid);
      Files.setAttribute(dir, "unix:gid", user.gid);
    }
    return dir;
  }

  private static void chmod(Path p, String perms) throws IOException {
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
  }

  /**
   * A directory for the socket directories whose every component passes the socket path rules
   * (owned by root or the DataNode user, writable by nobody else), short enough for {@code
   * sun_path}.
   */
  private Path createSocketBase(boolean root) throws IOException {
    List<Path> candidates = new ArrayList<>();
    String override = System.getProperty("scr.it.deploy.socketBase");
    if (override != null && !override.isEmpty()) {
      candidates.add(Paths.get(override));
    }
    if (root) {
      candidates.add(Paths.get("/run"));
    }
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    if (runtime != null && !runtime.isEmpty()) {
      candidates.add(Paths.get(runtime));
    }
    candidates.add(Paths.get(System.getProperty("java.io.tmpdir")).toAbsolutePath());
    candidates.add(Paths.get(System.getProperty("user.home")));
    int uid = dataNodeUser.uid;
    List<String> rejected = new ArrayList<>();
    for (Path c : candidates) {
      String problem = ClusterTree.socketPathProblem(c, uid);
      if (problem == null && c.toString().length() < 60) {
        try {
          Path base = Files.createTempDirectory(c, "scr-it-deploy-");
          chmod(base, "rwxr-xr-x");
          return base;
        } catch (IOException e) {
          problem = "cannot create a directory there: " + e;
        }
      }
      rejected.add(c + ": " + (problem == null ? "too long for sun_path" : problem));
    }
    throw new IllegalStateException(
        "no directory for the DataNode sockets passes the socket path rules (every component"
            + " owned by root or uid "
            + uid
            + " and writable by nobody else): "
            + rejected
            + ". Run as root, or pass -Dscr.it.deploy.socketBase=<such a directory>");
  }

  /**
   * Null when other users may run {@code java} (the JDK must be world-readable for children run as
   * the DataNode and client users); else why not. A JDK under a 0700 home cannot be used by them.
   */
  private static String unreadableByOthers(Path java) {
    try {
      Path real = java.toRealPath();
      if (((Integer) Files.getAttribute(real, "unix:mode") & 0005) != 0005) {
        return real
            + " is not readable and executable by other users: every process runs as the current user";
      }
      for (Path d = real.getParent(); d != null; d = d.getParent()) {
        if (((Integer) Files.getAttribute(d, "unix:mode") & 0001) == 0) {
          return "the JDK's directory "
              + d
              + " cannot be traversed by other users: every process runs as the current user";
        }
      }
      return null;
    } catch (IOException e) {
      return "cannot inspect the JDK (" + e + "): every process runs as the current user";
    }
  }

  private static int[] freePorts(int n) throws IOException {
    return ClusterTree.freePorts(InetAddress.getLoopbackAddress(), n);
  }

  private static int currentUid() throws IOException {
    return (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
  }

  private static User currentUser() throws IOException {
    int uid = currentUid();
    int gid = (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:gid");
    return new User(System.getProperty("user.name"), uid, gid);
  }

  /** Creates {@code name} as a system user with its own group unless it exists (idempotent). */
  private static User ensureUser(String name) throws IOException, InterruptedException {
    User u = lookUp(name);
    if (u != null) {
      return u;
    }
    Process p =
        new ProcessBuilder(
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                name)
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor();
    u = lookUp(name); // a concurrent run may have created it: exit code 9, the user exists
    if (u == null) {
      throw new IllegalStateException(
          "cannot create the test user "
              + name
              + " (useradd exited "
              + p.exitValue()
              + "): "
              + out);
    }
    return u;
  }

  private static User lookUp(String name) throws IOException, InterruptedException {
    String uid = run("id", "-u", name);
    String gid = run("id", "-g", name);
    if (uid == null || gid == null) {
      return null;
    }
    return new User(name, Integer.parseInt(uid), Integer.parseInt(gid));
  }

  private static String run(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    return p.waitFor() == 0 ? out : null;
  }

  // ---------------------------------------------------------------- shutdown

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
      ChildJvm.killAll();
      deleteTrees();
    }
  }

  /** Keeps the logs when the property is set, for a failure to be read after the run. */
  private void deleteTrees() throws IOException {
    ClusterTree.deleteUnlessKept("scr.it.deploy.keep", "scr-it-deploy", tree, socketBase);
  }

  /** Copies the child logs next to the surefire reports, for a failed run to be read afterwards. */
  void keepLogs(Path into) throws IOException {
    Path logs = tree.resolve("logs");
    if (!Files.isDirectory(logs)) {
      return;
    }
    ClusterTree.deleteRecursively(into); // this run's logs only
    Files.createDirectories(into);
    try (Stream<Path> s = Files.list(logs)) {
      for (Path f : (Iterable<Path>) s::iterator) {
        try (InputStream in = Files.newInputStream(f);
            OutputStream out = Files.newOutputStream(into.resolve(f.getFileName()))) {
          in.transferTo(out);
        }
      }
    }
  }
}
