package io.scr.testing;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.ClientContext;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitCache;
import org.apache.hadoop.net.unix.DomainSocket;

/**
 * An embedded HDFS cluster (NameNode plus N DataNodes in this JVM) in one of three {@link
 * DataNodeMode}s, for tests, benchmarks and the demo.
 *
 * <p>Each cluster gets private base and socket directories and its own {@code dfs.client.context},
 * so short-circuit caches never leak from one cluster into the next. {@link #close()} shuts the
 * cluster down, closes every file system handed out and deletes the directories; it is idempotent.
 *
 * <p>Not thread-safe to start or close; the handles it returns are as thread-safe as Hadoop's.
 */
public final class MiniDfs implements AutoCloseable {
  /**
   * Key the scr shim reads for its socket path (set here in {@link DataNodeMode#SHIM}). It repeats
   * a name from the shim's catalogue ({@code ScrShimKeys}), and the plugin classes below are named
   * as strings, because scr-testing cannot depend on the shim or the client: both use scr-testing
   * in their tests, and Maven refuses the cycle.
   */
  public static final String SHIM_SOCKET_PATH_KEY = "scr.shim.socket.path";

  /**
   * The shim plugin for test clusters (scr-datanode-shim's test jar): its socket path check judges
   * the socket's own directory and trusts only the temporary directory above it, which is
   * world-writable on most machines. {@link DataNodeMode#SHIM} names it unless the caller gave a
   * {@linkplain Builder#secureSocketBase secure socket base}, where the production plugin runs.
   */
  public static final String TEST_SHIM_PLUGIN_CLASS = "io.scr.shim.TempDirShimPlugin";

  /** How long {@link DataNodeMode#SHIM} start-up waits for every DataNode's shim socket. */
  private static final long SHIM_SOCKET_WAIT_MS = 30_000;

  static final String SHIM_PLUGIN_CLASS = "io.scr.shim.ScrShimPlugin";
  private static final AtomicInteger CLUSTER_IDS = new AtomicInteger();

  /** Clusters started and not yet closed in this JVM. */
  private static final AtomicInteger LIVE_CLUSTERS = new AtomicInteger();

  /** sun_path holds 107 bytes on Linux; leave room for "dn.65535.sock". */
  private static final int MAX_SOCKET_DIR_LENGTH = 80;

  private final Builder spec;
  private final Path baseDir;
  private final Path socketDir;
  private final Configuration conf;
  private final Configuration clientBase;
  private final List<FileSystem> openedFileSystems = new ArrayList<>();
  private MiniDFSCluster cluster;
  private boolean closed;

  private MiniDfs(Builder spec) throws IOException {
    this.spec = spec;
    int id = CLUSTER_IDS.incrementAndGet();
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    this.baseDir = Files.createTempDirectory(tmp, "minidfs-" + id + "-");
    this.socketDir =
        spec.secureSocketBase != null
            ? Files.createTempDirectory(spec.secureSocketBase, "scr-sock-")
            : createSocketDir(tmp);
    this.conf = spec.mode == DataNodeMode.STOCK_SCR ? stockConf(id) : baseConf(id);
    this.clientBase = spec.mode == DataNodeMode.SHIM ? shimClientConf(conf) : conf;
  }

  /** Starts a builder; {@link Builder#start()} brings the cluster up. */
  public static Builder builder() {
    return new Builder();
  }

  private static Path createSocketDir(Path tmp) throws IOException {
    Path candidate = tmp.toAbsolutePath();
    if (candidate.toString().length() > MAX_SOCKET_DIR_LENGTH) {
      // Deep build directories make socket paths too long for sun_path; /tmp is short.
      candidate = Paths.get("/tmp");
    }
    return Files.createTempDirectory(candidate, "scr-sock-");
  }

  private Configuration baseConf(int id) {
    Configuration c = new Configuration();
    c.setLong("dfs.blocksize", spec.blockSize);
    c.setLong("dfs.namenode.fs-limits.min-block-size", 0);
    c.setInt("dfs.replication", Math.min(3, spec.dataNodes));
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.set("dfs.client.context", "scr-test-" + id + "-" + ProcessHandle.current().pid());
    c.setInt("dfs.heartbeat.interval", 1);
    c.setBoolean("dfs.permissions.enabled", true);
    if (spec.mode == DataNodeMode.SHIM) {
      // The shim's socket path check runs, its own directory (0700, ours) included; only the
      // shared temporary directory above it (world-writable /tmp on most machines) is trusted,
      // by the test plugin, unless the caller gave a base that passes the check.
      c.set(
          "dfs.datanode.plugins",
          spec.secureSocketBase == null ? TEST_SHIM_PLUGIN_CLASS : SHIM_PLUGIN_CLASS);
      c.set(SHIM_SOCKET_PATH_KEY, shimSocketTemplate());
      // dfs.domain.socket.path stays unset on the cluster: the DataNode must not bind a stock
      // socket next to the shim's.
    }
    for (Consumer<Configuration> customizer : spec.customizers) {
      customizer.accept(c);
    }
    if (spec.mode == DataNodeMode.SHIM) {
      String plugin = c.get("dfs.datanode.plugins"); // a customizer may name a plugin of its own
      try {
        Class.forName(plugin, false, MiniDfs.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(
            "DataNodeMode.SHIM needs "
                + plugin
                + " on the test classpath; add io.scr:scr-datanode-shim and its test jar"
                + " (<type>test-jar</type>) as test dependencies",
            e);
      }
    }
    return c;
  }

  private String shimSocketTemplate() {
    return socketDir.resolve("shim._PORT.sock").toString();
  }

  /**
   * Client settings in {@link DataNodeMode#SHIM}: short-circuit reads through the shim's socket
   * (mode C with the stock client, which needs libhadoop: call {@link
   * StockNative#requireAvailable()}; mode B with the scr client, which reads the same keys).
   */
  private Configuration shimClientConf(Configuration clusterConf) {
    Configuration c = new Configuration(clusterConf);
    c.setBoolean("dfs.client.read.shortcircuit", true);
    c.set("dfs.domain.socket.path", shimSocketTemplate());
    for (Consumer<Configuration> customizer : spec.customizers) {
      customizer.accept(c); // customizers win over the mode's defaults
    }
    return c;
  }

  private Configuration stockConf(int id) {
    StockNative.requireAvailable();
    Configuration c = baseConf(id);
    c.setBoolean("dfs.client.read.shortcircuit", true);
    c.set("dfs.domain.socket.path", socketDir.resolve("dn._PORT.sock").toString());
    // Sees every DataNode, restarted ones too, so close() can mend a stock watcher's leak.
    c.set("dfs.datanode.plugins", StockDataNodeWatchers.class.getName());
    for (Consumer<Configuration> customizer : spec.customizers) {
      customizer.accept(c); // customizers win over the mode's defaults
    }
    return c;
  }

  private void start() throws IOException {
    cluster =
        new MiniDFSCluster.Builder(new Configuration(conf), baseDir.toFile())
            .numDataNodes(spec.dataNodes)
            .build();
    LIVE_CLUSTERS.incrementAndGet();
    cluster.waitActive();
    if (spec.mode == DataNodeMode.SHIM) {
      awaitShimSockets();
    }
  }

  /**
   * The shim binds once its DataNode's dataset exists, shortly after registration; a client that
   * connected before would mark the path unusable for 10 minutes, so start-up waits for it.
   */
  private void awaitShimSockets() throws IOException {
    long deadline = System.nanoTime() + SHIM_SOCKET_WAIT_MS * 1_000_000L;
    for (int i = 0; i < cluster.getDataNodes().size(); i++) {
      Path socket = Paths.get(socketPath(i));
      while (!Files.exists(socket)) {
        if (System.nanoTime() - deadline > 0) {
          throw new IOException(
              "the scr shim of DataNode "
                  + i
                  + " did not bind "
                  + socket
                  + " within "
                  + SHIM_SOCKET_WAIT_MS
                  + " ms; see the DataNode log for the shim's error");
        }
        try {
          Thread.sleep(10); // a file appearing has no latch to wait on across modules
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted waiting for " + socket, e);
        }
      }
    }
  }

  /** The running cluster. */
  public MiniDFSCluster cluster() {
    return cluster;
  }

  public DataNodeMode mode() {
    return spec.mode;
  }

  public long blockSize() {
    return spec.blockSize;
  }

  public int dataNodes() {
    return spec.dataNodes;
  }

  /** The directory holding the DataNodes' UNIX sockets. */
  public Path socketDir() {
    return socketDir;
  }

  /**
   * The UNIX socket path DataNode {@code index} serves short-circuit requests on, with {@code
   * _PORT} resolved; empty in {@link DataNodeMode#TCP}.
   */
  public String socketPath(int index) {
    DataNode dn = cluster.getDataNodes().get(index);
    String key = spec.mode == DataNodeMode.SHIM ? SHIM_SOCKET_PATH_KEY : "dfs.domain.socket.path";
    String path = conf.get(key, "");
    return path.isEmpty() ? "" : DomainSocket.getEffectivePath(path, dn.getXferPort());
  }

  /** The NameNode URI. */
  public URI uri() {
    return cluster.getURI();
  }

  /** A copy of the client configuration for this cluster and mode (fs.defaultFS set). */
  public Configuration clientConf() {
    Configuration c = new Configuration(clientBase);
    c.set("fs.defaultFS", cluster.getURI().toString());
    return c;
  }

  /** A new, uncached file system with the mode's client settings; closed by {@link #close()}. */
  public DistributedFileSystem fileSystem() {
    return newFileSystem(c -> {});
  }

  /**
   * A new, uncached file system with the mode's client settings plus {@code customizer}; closed by
   * {@link #close()}. The returned type is whatever {@code fs.hdfs.impl} names.
   */
  @SuppressWarnings("unchecked")
  public <T extends FileSystem> T newFileSystem(Consumer<Configuration> customizer) {
    Configuration c = clientConf();
    customizer.accept(c);
    try {
      FileSystem fs = FileSystem.newInstance(cluster.getURI(), c);
      synchronized (openedFileSystems) {
        openedFileSystems.add(fs);
      }
      return (T) fs;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a file system on " + cluster.getURI(), e);
    }
  }

  /** Writes {@code length} seeded random bytes to {@code path} and returns them. */
  public byte[] writeRandomFile(String path, int length, long seed) throws IOException {
    byte[] data = new byte[length];
    new Random(seed).nextBytes(data);
    writeFile(path, data);
    return data;
  }

  /** Writes {@code data} to {@code path}, replacing it, and waits for full replication. */
  public void writeFile(String path, byte[] data) throws IOException {
    DistributedFileSystem fs = cluster.getFileSystem();
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    try (FSDataOutputStream out = fs.create(p, true)) {
      writeAll(out, data);
    }
  }

  /**
   * Writes {@code data} to {@code path} with a single replica on DataNode {@code index} (a favored
   * node) and checks that every block landed there, so another DataNode of the cluster holds none:
   * a file that is remote to a client given only another DataNode's socket.
   *
   * @throws IOException if the write fails or the NameNode placed a block elsewhere
   */
  public void writeFileOn(int index, String path, byte[] data) throws IOException {
    DataNode dn = cluster.getDataNodes().get(index);
    DatanodeID id = dn.getDatanodeId();
    InetSocketAddress favored = new InetSocketAddress(id.getIpAddr(), id.getXferPort());
    DistributedFileSystem fs = cluster.getFileSystem();
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    try (FSDataOutputStream out =
        fs.create(
            p,
            FsPermission.getFileDefault(),
            true,
            4096,
            (short) 1,
            spec.blockSize,
            null,
            new InetSocketAddress[] {favored})) {
      writeAll(out, data);
    }
    for (LocatedBlock lb :
        fs.getClient().getLocatedBlocks(path, 0, data.length).getLocatedBlocks()) {
      DatanodeInfo[] locations = lb.getLocations();
      if (locations.length != 1 || !locations[0].getDatanodeUuid().equals(id.getDatanodeUuid())) {
        throw new IOException(
            "block "
                + lb.getBlock()
                + " of "
                + path
                + " is on "
                + java.util.Arrays.toString(locations)
                + ", not only on DataNode "
                + index
                + " ("
                + id
                + ")");
      }
    }
  }

  private static void writeAll(OutputStream out, byte[] data) throws IOException {
    int chunk = 1 << 20;
    for (int off = 0; off < data.length; off += chunk) {
      out.write(data, off, Math.min(chunk, data.length - off));
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    IOException failure = null;
    synchronized (openedFileSystems) {
      for (FileSystem fs : openedFileSystems) {
        try {
          fs.close();
        } catch (IOException e) {
          failure = e;
        }
      }
      openedFileSystems.clear();
    }
    closeShortCircuitCaches();
    if (cluster != null) {
      cluster.shutdown(true);
      if (spec.mode == DataNodeMode.STOCK_SCR) {
        StockDataNodeWatchers.closeLeaked(conf);
      }
      if (LIVE_CLUSTERS.decrementAndGet() == 0) {
        stopOrphanedCommandProcessors();
      }
    }
    deleteRecursively(socketDir);
    deleteRecursively(baseDir);
    if (failure != null) {
      throw new UncheckedIOException("closing a test file system failed", failure);
    }
  }

  /**
   * A DataNode's {@code BPServiceActor} stops its "Command processor" thread by interrupting it;
   * under load the interrupt can reach the thread before it started (a no-op in Java), and the
   * thread then waits on its queue forever (Hadoop 3.4.2, seen in CI on 2 busy cores). Interrupt
   * what the shut-down DataNodes left, so one test class's Hadoop race is not the next one's leak.
   * Only called when no other cluster runs in this JVM, whose processors must keep running.
   */
  private static void stopOrphanedCommandProcessors() {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("Command processor") && t.isAlive()) {
        t.interrupt();
      }
    }
  }

  /** The directories this cluster owns; every fd into them must be closed after {@link #close}. */
  public List<Path> ownedPaths() {
    return List.of(baseDir, socketDir);
  }

  /**
   * Stock short-circuit caches live in a JVM-wide {@link ClientContext} per {@code
   * dfs.client.context} and keep fds and threads after every file system closed; close this
   * cluster's so the next test class starts clean.
   */
  private void closeShortCircuitCaches() {
    if (cluster == null) {
      return;
    }
    Configuration c = clientConf();
    ClientContext context = ClientContext.getFromConf(c);
    int shards = c.getInt("dfs.client.short.circuit.num", 1);
    for (int shard = 0; shard < shards; shard++) {
      ShortCircuitCache cache = context.getShortCircuitCache(shard);
      cache.close();
      closeSlotReleaserSockets(cache);
    }
  }

  /**
   * Stock {@code ShortCircuitCache.close()} (3.4.2) leaves the UNIX sockets its slot releaser
   * caches per path ({@code pathToDomainSocket}, HDFS-16535) open. Test-only reflection closes them
   * so leak checks see our resources, not stock's; absent the field, there is nothing to do.
   */
  private static void closeSlotReleaserSockets(ShortCircuitCache cache) {
    try {
      Field field = ShortCircuitCache.class.getDeclaredField("pathToDomainSocket");
      field.setAccessible(true);
      Object sockets = field.get(cache);
      if (sockets instanceof Map) {
        for (Object socket : ((Map<?, ?>) sockets).values()) {
          if (socket instanceof Closeable) {
            ((Closeable) socket).close();
          }
        }
      }
    } catch (NoSuchFieldException e) {
      // another Hadoop version: no cached release sockets
    } catch (ReflectiveOperationException | IOException e) {
      throw new IllegalStateException("cannot close stock slot-releaser sockets", e);
    }
  }

  private static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + dir, e);
    }
  }

  /** Describes a cluster to start. */
  public static final class Builder {
    private int dataNodes = 1;
    private long blockSize = 1 << 20;
    private DataNodeMode mode = DataNodeMode.TCP;
    private final List<Consumer<Configuration>> customizers = new ArrayList<>();
    private Path secureSocketBase;

    private Builder() {}

    /** Number of DataNodes, at least 1. Default 1. */
    public Builder dataNodes(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("dataNodes must be at least 1, got " + n);
      }
      this.dataNodes = n;
      return this;
    }

    /** HDFS block size in bytes; a positive multiple of 512 (dfs.bytes-per-checksum). */
    public Builder blockSize(long bytes) {
      if (bytes <= 0 || bytes % 512 != 0) {
        throw new IllegalArgumentException(
            "blockSize must be a positive multiple of 512 (dfs.bytes-per-checksum), got " + bytes);
      }
      this.blockSize = bytes;
      return this;
    }

    public Builder mode(DataNodeMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /**
     * Puts the socket directory under {@code base}, a directory that with all its parents passes
     * the socket path rules for this process's user (owned by root or this user, writable by nobody
     * else): the production shim plugin runs and its check judges every component. Default: under
     * {@code java.io.tmpdir}, whose parents (a world-writable {@code /tmp}) the test plugin ({@link
     * MiniDfs#TEST_SHIM_PLUGIN_CLASS}) trusts.
     */
    public Builder secureSocketBase(Path base) {
      this.secureSocketBase = base.toAbsolutePath();
      return this;
    }

    /** Adjusts the configuration of the cluster and its clients; applied after the mode's keys. */
    public Builder configure(Consumer<Configuration> customizer) {
      customizers.add(Objects.requireNonNull(customizer, "customizer"));
      return this;
    }

    /** Starts the cluster and waits until every DataNode has registered. */
    public MiniDfs start() throws IOException {
      MiniDfs dfs = new MiniDfs(this);
      try {
        dfs.start();
        return dfs;
      } catch (IOException | RuntimeException e) {
        try {
          dfs.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    }

    /** A JUnit 5 extension that starts this cluster once per test class. */
    public MiniDfsExtension buildExtension() {
      return new MiniDfsExtension(this);
    }
  }
}
