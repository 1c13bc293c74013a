package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.shm.SegmentFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.net.unix.DomainSocket;
import org.apache.hadoop.util.ServicePlugin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DataNode plugin that serves HDFS short-circuit reads over a Netty epoll UNIX socket, wire
 * compatible with a stock DataNode (ops 87, 88, 89), without libhadoop. Enable it in {@code
 * hdfs-site.xml}:
 *
 * <pre>{@code
 * dfs.datanode.plugins = io.scr.shim.ScrShimPlugin
 * scr.shim.socket.path = /var/lib/hadoop-hdfs/scr._PORT.sock
 * }</pre>
 *
 * and point clients' {@code dfs.domain.socket.path} at the same path. Keys: {@link ScrShimKeys}.
 *
 * <p>Lifecycle: {@link #start(Object)} (called by the DataNode after its servers are up) returns at
 * once; a control thread ({@code scr-shim-control}) waits for the DataNode's dataset, which may
 * still be null then, checks the socket path's security and binds, and registers the metrics2
 * source {@code ScrShim-<transfer port>} (every metric: {@link ShimMetric}; JMX {@code
 * Hadoop:service=DataNode,name=ScrShim-<port>}). It then runs the invalidation scan every {@code
 * scr.shim.invalidation.interval.ms} and, on a DataNode that caches blocks, hears its cache events
 * ({@link BlockCacheEvents}). {@link #stop()} (from DataNode shutdown) unregisters the source,
 * closes the socket, every connection and segment, and every thread the plugin started, and removes
 * the socket file. A failure to serve is logged with its cause and fix and never stops the
 * DataNode.
 *
 * <p>The socket path check judges every component of the path. Tests, whose sockets live below a
 * world-writable temporary directory, name a subclass of their own in {@code dfs.datanode.plugins}
 * that trusts that directory ({@link #ScrShimPlugin(UnaryOperator)}); no configuration key turns
 * the check off.
 *
 * <p>Thread-safety: {@code start}, {@code stop} and the accessors may be called from any thread;
 * lifecycle state is guarded by this object's monitor.
 */
public class ScrShimPlugin implements ServicePlugin {
  private static final Logger LOG = LoggerFactory.getLogger(ScrShimPlugin.class);
  private static final long DATASET_POLL_MS = 50;

  private final ShimMetrics metrics = new ShimMetrics();

  /** The shim's time: every latency, deadline and backoff it measures. */
  private final Ticker ticker = Ticker.SYSTEM;

  private final CountDownLatch serving = new CountDownLatch(1);

  @GuardedBy("this")
  private ScheduledThreadPoolExecutor control;

  @GuardedBy("this")
  private ShimServer server;

  @GuardedBy("this")
  private SegmentRegistry registry;

  @GuardedBy("this")
  private ClientLimits limits;

  @GuardedBy("this")
  private ShimMetricsSource source;

  @GuardedBy("this")
  private ScheduledFuture<?> waiting;

  @GuardedBy("this")
  private InvalidationScanner scanner;

  /** The DataNode's block cache events, when it caches blocks; null otherwise. */
  @GuardedBy("this")
  private BlockCacheEvents cacheEvents;

  @GuardedBy("this")
  private boolean stopped;

  /** Unlinks the socket at JVM exit (see {@link #socketRemovalHook}); null until serving. */
  @GuardedBy("this")
  private Runnable exitHook;

  /** Priority among Hadoop's shutdown hooks: after the DataNode's own (default 10) have run. */
  static final int EXIT_HOOK_PRIORITY = 5;

  private volatile Throwable failure;

  /** For a socket path, the directory the check does not judge (tests only); null: none. */
  private final UnaryOperator<Path> trustedDirectory;

  /** The plugin as a DataNode builds it from {@code dfs.datanode.plugins}. */
  public ScrShimPlugin() {
    this.trustedDirectory = null;
  }

  /**
   * For test subclasses only: the socket path check does not judge {@code
   * trustedDirectory.apply(socketPath)} and its ancestors (the directories below it, the socket's
   * own included, are judged), as stock's tests skip path components, so that a test cluster can
   * put its socket below a world-writable temporary directory while the check runs. Refused on a
   * secure (Kerberos) DataNode; shown by the {@code SocketPathCheckSkipped} metric and one WARN.
   */
  protected ScrShimPlugin(UnaryOperator<Path> trustedDirectory) {
    this.trustedDirectory = java.util.Objects.requireNonNull(trustedDirectory, "trustedDirectory");
  }

  /** Called by the DataNode; {@code service} is the {@code DataNode}. */
  @Override
  public final synchronized void start(Object service) {
    if (!(service instanceof DataNode)) {
      throw new IllegalArgumentException(
          "ScrShimPlugin is a DataNode plugin (dfs.datanode.plugins), not for " + service);
    }
    if (control != null || stopped) {
      throw new IllegalStateException("ScrShimPlugin.start called twice");
    }
    DataNode dn = (DataNode) service;
    ShimConfig config = ShimConfig.from(dn.getConf());
    if (config.socketPathTemplate.isEmpty()) {
      LOG.warn(
          "{} is not set: the scr shim serves nothing. Set it to a path such as"
              + " /var/lib/hadoop-hdfs/scr._PORT.sock",
          ScrShimKeys.SOCKET_PATH);
      return;
    }
    control = new ScheduledThreadPoolExecutor(1, r -> newThread(r, "scr-shim-control"));
    control.setRemoveOnCancelPolicy(true);
    waiting =
        control.scheduleWithFixedDelay(
            () -> startWhenDatasetExists(dn, config), 0, DATASET_POLL_MS, TimeUnit.MILLISECONDS);
  }

  private static Thread newThread(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  private synchronized void startWhenDatasetExists(DataNode dn, ShimConfig config) {
    if (stopped || server != null || failure != null) {
      return;
    }
    FsDatasetSpi<?> dataset = dn.getFSDataset();
    if (dataset == null) {
      return; // the first NameNode handshake has not completed yet
    }
    waiting.cancel(false);
    Path socketPath =
        Paths.get(DomainSocket.getEffectivePath(config.socketPathTemplate, dn.getXferPort()));
    try {
      Path trusted =
          trustedDirectory == null
              ? null
              : trustedDirectory.apply(socketPath.toAbsolutePath()).toAbsolutePath();
      SocketPathSecurity.checkTrustAllowed(
          getClass().getName(),
          trusted,
          org.apache.hadoop.security.UserGroupInformation.isSecurityEnabled());
      if (trusted != null) {
        metrics.socketPathCheckSkipped = true;
        LOG.warn(
            "{}: the socket path check does not judge {} and its ancestors. A test build of the"
                + " plugin; never use it on a real DataNode",
            getClass().getName(),
            trusted);
      }
      SocketPathSecurity.check(socketPath, SocketPathSecurity.effectiveUid(), trusted);
      limits = ClientLimits.from(config);
      registry = new SegmentRegistry(limits, metrics);
      SegmentFactory segments =
          SegmentFactory.newBuilder()
              .useMemfd(config.useMemfd)
              .fallbackDirectory(config.shmDir)
              .namePrefix("scr-shim")
              .build();
      ShortCircuitService service =
          new ShortCircuitService(
              new ShortCircuitService.DatasetAccess() {
                @Override
                public FsDatasetSpi<?> dataset() {
                  return dn.getFSDataset();
                }

                @Override
                public boolean blockPoolReady(String bpid) {
                  try {
                    dn.getDNRegistrationForBP(bpid);
                    return true;
                  } catch (IOException e) {
                    return false; // not registered yet: its replicas are still being loaded
                  }
                }

                @Override
                public boolean blockTokensEnabled(String bpid) {
                  try {
                    // What the NameNode exported when the pool registered: the value stock's
                    // DataNode sets isBlockTokenEnabled from (equal for every pool, or the
                    // DataNode refuses to run).
                    return dn.getDNRegistrationForBP(bpid).getExportedKeys().isBlockTokenEnabled();
                  } catch (IOException | RuntimeException e) {
                    return true; // cannot tell: enforce (fail closed)
                  }
                }
              },
              dn.getBlockPoolTokenSecretManager(),
              registry,
              limits,
              segments,
              metrics,
              new DataNodeAccounting(dn, ticker),
              config.extensionsEnabled,
              ticker);
      ShimServer s = new ShimServer(socketPath, config, service, registry, limits, metrics, ticker);
      s.start();
      server = s;
      exitHook = socketRemovalHook(s.socketPath());
      org.apache.hadoop.util.ShutdownHookManager.get()
          .addShutdownHook(exitHook, EXIT_HOOK_PRIORITY);
      LOG.info("scr shim segments: {}", segments.mechanism());
      ClientLimits lim = limits;
      source =
          new ShimMetricsSource(metrics, lim::clientCount, dn.getXferPort(), socketPath.toString());
      source.register();
      ScheduledThreadPoolExecutor scans = control;
      scanner =
          new InvalidationScanner(
              registry,
              () -> replicaLookup(dn),
              (scan, delayMs) -> scans.schedule(scan, delayMs, TimeUnit.MILLISECONDS),
              ticker,
              metrics,
              config.invalidationIntervalMs);
      scanner.start();
      cacheEvents = BlockCacheEvents.install(dn, registry, metrics);
      serving.countDown();
    } catch (IOException | RuntimeException | LinkageError e) {
      failure = e;
      LOG.error(
          "The scr shim cannot serve short-circuit reads on {}: {}", socketPath, e.getMessage(), e);
    }
  }

  /** The replica and cache lookups of the DataNode's dataset, or null while it has none. */
  private static SegmentRegistry.ReplicaLookup replicaLookup(DataNode dn) {
    FsDatasetSpi<?> ds = dn.getFSDataset();
    return ds == null ? null : new DatasetLookup(ds);
  }

  /** The scan's view of the dataset: the replica map, and the block cache when it has one. */
  private static final class DatasetLookup implements SegmentRegistry.ReplicaLookup {
    private final FsDatasetSpi<?> ds;

    DatasetLookup(FsDatasetSpi<?> ds) {
      this.ds = ds;
    }

    @Override
    @SuppressWarnings("deprecation") // getReplica: the non-copying replica map lookup
    public org.apache.hadoop.hdfs.server.datanode.Replica find(String bpid, long blockId) {
      return ds.getReplica(bpid, blockId);
    }

    @Override
    public boolean cachingEnabled() {
      return ds.getCacheCapacity() > 0;
    }

    @Override
    public boolean isCached(String bpid, long blockId) {
      return ds.isCached(bpid, blockId);
    }
  }

  /** Called by the DataNode on shutdown: releases every thread, fd, segment and the socket file. */
  @Override
  public final void stop() {
    ScheduledThreadPoolExecutor c;
    synchronized (this) {
      if (stopped) {
        return;
      }
      stopped = true;
      c = control;
      if (scanner != null) {
        scanner.stop();
      }
      if (cacheEvents != null) {
        cacheEvents.uninstall();
        cacheEvents = null;
      }
      if (source != null) {
        source.unregister();
      }
      if (server != null) {
        server.close();
        server = null;
      }
      if (exitHook != null) {
        org.apache.hadoop.util.ShutdownHookManager.get().removeShutdownHook(exitHook);
        exitHook = null;
      }
    }
    if (c != null) {
      c.shutdownNow();
      try {
        if (!c.awaitTermination(10, TimeUnit.SECONDS)) {
          LOG.warn("scr-shim-control did not stop within 10 s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * A DataNode stopped by a signal (SIGTERM from {@code hdfs --daemon stop}, systemd, a container
   * runtime) exits without calling its plugins' {@code stop()}: this hook, run by Hadoop's {@code
   * ShutdownHookManager} at JVM exit, unlinks the socket file the shim bound, so clients meet "no
   * such socket" at once instead of a stale socket nobody accepts on. It removes the file only if
   * it is still the one this shim bound (same file key): a new DataNode may already have bound its
   * own at that path. Nothing else is worth doing at exit: fds and mappings die with the process.
   */
  static Runnable socketRemovalHook(Path socket) {
    Object bound = fileKey(socket);
    return () -> {
      Object now = fileKey(socket);
      if (bound != null && bound.equals(now)) {
        try {
          java.nio.file.Files.deleteIfExists(socket);
          LOG.info("scr shim removed its socket {} at exit", socket);
        } catch (IOException e) {
          LOG.warn("scr shim could not remove its socket {} at exit: {}", socket, e.toString());
        }
      }
    };
  }

  private static Object fileKey(Path p) {
    try {
      return java.nio.file.Files.readAttributes(
              p, java.nio.file.attribute.BasicFileAttributes.class)
          .fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  /** Same as {@link #stop()}. */
  @Override
  public final void close() {
    stop();
  }

  /**
   * Waits until the shim is serving; false if it did not within {@code timeoutMs} (see {@link
   * #failure()} for why).
   */
  public final boolean awaitServing(long timeoutMs) throws InterruptedException {
    return serving.await(timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Why the shim could not start serving, or null. */
  public final Throwable failure() {
    return failure;
  }

  /** The bound socket path, or null while not serving. */
  public final synchronized Path socketPath() {
    return server == null ? null : server.socketPath();
  }

  /**
   * A point-in-time copy of the shim's counters: requests by op and status, fds passed, live
   * segments, slots, connections and clients, per-op latency, rejections by reason.
   */
  public final Map<String, Long> counters() {
    Map<String, Long> snapshot = metrics.snapshot();
    ClientLimits l;
    synchronized (this) {
      l = limits;
    }
    snapshot.put("live.clients", l == null ? 0L : (long) l.clientCount());
    return Collections.unmodifiableMap(snapshot);
  }

  ShimMetrics metrics() {
    return metrics;
  }

  /** The metrics2 source once serving (kept after stop, unregistered), or null. */
  synchronized ShimMetricsSource metricsSource() {
    return source;
  }

  synchronized SegmentRegistry registry() {
    return registry;
  }
}
