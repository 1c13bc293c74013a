package io.scr.core;

import io.scr.cache.LeaseCacheStats;
import io.scr.cache.Ticker;
import io.scr.core.metrics.ClientCounters;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.core.metrics.ScrClientDiagnostics;
import io.scr.core.metrics.ScrClientMetrics;
import io.scr.core.metrics.SummaryReporter;
import io.scr.core.net.DomainSocketPool;
import io.scr.core.net.FailureClass;
import io.scr.core.net.PathBackoff;
import io.scr.core.replica.AbsentReplicas;
import io.scr.core.replica.ReplicaManager;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.token.Token;

/**
 * The short-circuit engine shared by every stream of one client context: domain-socket pool,
 * per-path backoff, open-replica cache, slot pools and reader. Obtain it with {@link
 * #acquire(Configuration)}; each acquire needs one {@link #close()}; the last close releases every
 * fd, socket, segment and thread.
 *
 * <p><b>Which socket.</b> {@link #socketPathFor} resolves the DataNode's socket from {@code
 * scr.client.socket.paths} (else {@code dfs.domain.socket.path}), replacing {@code _PORT} with the
 * DataNode's transfer port, and only for DataNodes on this host (an address of a local interface,
 * cached per address). With several DataNodes on one host each must have its own socket path,
 * distinguished by {@code _PORT}.
 *
 * <p>Thread-safety: thread-safe. {@link #socketPathFor} and a cache-hit {@link #lease} take no lock
 * other readers wait on; a cache hit with a reused lease allocates nothing ({@link
 * #leaseWithThreadSpare} keeps that lease per thread in a thread-local, whose entries are confined
 * to their thread). Replicas that failed a checksum through the accessor sit in a concurrent set.
 * The accessor's listing of local sockets is an immutable snapshot in a volatile field; two threads
 * refreshing it at once both list the directory and one snapshot wins (benign); the warning that a
 * directory cannot be listed is logged once (a CAS). The registry of shared instances is guarded by
 * a static monitor, taken only by acquire and close.
 */
public final class ScrClient implements Closeable {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ScrClient.class);
  private static final Object REGISTRY_LOCK = new Object();

  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private static final Map<String, ScrClient> REGISTRY = new HashMap<>();

  private final String context;

  /** The JMX view {@code scr doctor --pid} reads. */
  private final ScrClientDiagnostics diagnostics;

  /** The client keys this engine was built from, to name differences of later acquires. */
  private final Map<String, String> settings;

  /** The sets of differing settings already logged (by {@link #warnIfSettingsDiffer}). */
  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private final Set<String> warnedDifferences = new HashSet<>();

  private final boolean enabled;
  private final List<String> pathTemplates;
  private final PathBackoff backoff;
  private final ReplicaManager replicas;
  private final EnumMap<FallbackReason, LongAdder> fallbacks = new EnumMap<>(FallbackReason.class);
  private final ConcurrentHashMap<String, Boolean> localAddresses = new ConcurrentHashMap<>();
  private final DataNodeHints hints = new DataNodeHints();
  private final LongAdder misdirected = new LongAdder();
  private final FdBudgetWarning fdBudgetWarning;
  private final ClientCounters counters = new ClientCounters();

  /**
   * Opens replicas ahead for streams that prefetch on open ({@link #submitPrefetch}): bounded
   * queue, daemon threads that start on first use and stop when idle; shut down by the last close.
   */
  private final java.util.concurrent.ThreadPoolExecutor prefetchExecutor;

  private final ScrClientMetrics metrics;
  private final boolean metricsEnabled;
  private final int summaryIntervalSeconds;

  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private SummaryReporter summary;

  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private int references;

  private volatile boolean closed;

  private final Ticker ticker;

  /** How long {@link #leaseFromLocalDataNode} reuses one listing of the sockets' directories. */
  static final long SOCKET_LISTING_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);

  /** The last listing of {@link #localSocketPaths()} (null: none yet); replaced, never mutated. */
  private volatile SocketListing socketListing;

  /**
   * The transfer port {@code dfs.datanode.address} names (0: none), for {@code _PORT} when a socket
   * directory cannot be listed.
   */
  private final int configuredXferPort;

  /** The key the socket path templates come from (for log lines). */
  private final String templateKey;

  /** Whether the no-socket-matches-the-template WARN was logged (once per engine). */
  private final AtomicBoolean noSocketWarned = new AtomicBoolean();

  /** Whether the cannot-list-the-socket-directory WARN was logged (once per engine). */
  private final AtomicBoolean unlistableWarned = new AtomicBoolean();

  /**
   * Lists a socket directory: null when it cannot be listed. A seam for tests, which may run as
   * root (root lists any directory whatever its mode).
   */
  volatile java.util.function.Function<File, String[]> directoryLister = File::list;

  /** Most replicas {@link #replicaFailedChecksum} remembers. */
  static final int MAX_KNOWN_CORRUPT = 4096;

  /** Replicas that failed a checksum through the accessor ({@link #replicaFailedChecksum}). */
  private final Set<String> knownCorrupt = ConcurrentHashMap.newKeySet();

  /**
   * Each thread's spare lease ({@link #leaseWithThreadSpare}); null once closed. Dropping the
   * reference on close lets the thread-local entries of a closed engine be collected (a spare
   * refers back to the engine, so the entries would otherwise keep their own key alive).
   */
  private volatile ThreadLocal<LeaseSpare> spares = new ThreadLocal<>();

  /**
   * Every thread's spare holder, so that {@link #close()} can empty them: a thread-local entry
   * whose key is gone stays in its thread's map until that thread happens to touch its
   * thread-locals again, and a spare lease refers to the whole engine (cache, slot pools, buffers).
   * Weak: a holder goes with its thread. Touched once per thread and by close.
   */
  private final Set<LeaseSpare> spareHolders =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  ScrClient(Configuration conf, String context, Ticker ticker) {
    this.context = context;
    this.settings = clientSettings(conf);
    this.ticker = ticker;
    for (FallbackReason r : FallbackReason.values()) {
      fallbacks.put(r, new LongAdder());
    }
    // A bad budget fails here, before any socket, thread or fd exists.
    Integer capacity = ScrKeys.CACHE_CAPACITY.get(conf);
    Long fdBudget = ScrKeys.CACHE_FD_BUDGET.get(conf);
    if (fdBudget != null && fdBudget < 2) {
      throw new IllegalArgumentException(
          ScrKeys.CACHE_FD_BUDGET.name()
              + "="
              + fdBudget
              + ": must be at least 2 (one replica holds two fds); unset it to derive the budget"
              + " from the process fd limit");
    }
    int prefetchThreads = ScrKeys.PREFETCH_THREADS.get(conf);
    int prefetchQueue = ScrKeys.PREFETCH_QUEUE_SIZE.get(conf);
    if (prefetchThreads < 1 || prefetchQueue < 1) {
      throw new IllegalArgumentException(
          ScrKeys.PREFETCH_THREADS.name()
              + "="
              + prefetchThreads
              + ", "
              + ScrKeys.PREFETCH_QUEUE_SIZE.name()
              + "="
              + prefetchQueue
              + ": both must be at least 1; turn prefetch off with "
              + ScrKeys.PREFETCH_MAX_BLOCKS.name()
              + "=0 instead");
    }
    this.enabled = ScrKeys.CLIENT_ENABLED.get(conf);
    this.pathTemplates = socketPathTemplates(conf);
    this.configuredXferPort = configuredXferPort(conf);
    this.templateKey =
        ScrKeys.CLIENT_SOCKET_PATHS.get(conf) != null
            ? ScrKeys.CLIENT_SOCKET_PATHS.name()
            : ScrKeys.DFS_DOMAIN_SOCKET_PATH.name();
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    base.put(FailureClass.CONNECT, ScrKeys.BACKOFF_CONNECT_SECONDS.get(conf));
    base.put(FailureClass.UNSUPPORTED, ScrKeys.BACKOFF_UNSUPPORTED_SECONDS.get(conf));
    base.put(FailureClass.IO, ScrKeys.BACKOFF_IO_SECONDS.get(conf));
    base.put(FailureClass.SHM, ScrKeys.BACKOFF_SHM_SECONDS.get(conf));
    this.backoff = new PathBackoff(ticker, base, ScrKeys.BACKOFF_MAX_SECONDS.get(conf));
    Integer readTimeout = ScrKeys.NET_READ_TIMEOUT_MS.get(conf);
    if (readTimeout == null) {
      readTimeout = Math.min(ScrKeys.DFS_CLIENT_SOCKET_TIMEOUT.get(conf), 5000);
      if (readTimeout <= 0) {
        readTimeout = 5000;
      }
    }
    DomainSocketPool pool =
        DomainSocketPool.newBuilder()
            .connectTimeoutMs(ScrKeys.NET_CONNECT_TIMEOUT_MS.get(conf))
            .readTimeoutMs(readTimeout)
            .maxIdlePerPath(ScrKeys.NET_POOL_MAX_IDLE.get(conf))
            .idleExpiryMs(ScrKeys.NET_POOL_IDLE_EXPIRY_MS.get(conf))
            .ticker(ticker)
            .build();
    Long stale = ScrKeys.REPLICA_STALE_THRESHOLD_MS.get(conf);
    if (stale == null) {
      stale =
          ScrKeys.DFS_REPLICA_STALE_THRESHOLD_MS.isSet(conf)
              ? ScrKeys.DFS_REPLICA_STALE_THRESHOLD_MS.get(conf)
              : 300000L;
    }
    this.replicas =
        ReplicaManager.newBuilder(context, pool, backoff)
            .ticker(ticker)
            .capacity(capacity == null ? 0 : capacity)
            .fdBudget(fdBudget == null ? 0 : fdBudget)
            .idleExpiryMs(ScrKeys.CACHE_IDLE_EXPIRY_MS.get(conf))
            .staleThresholdMs(stale)
            .shmEnabled(ScrKeys.SHM_ENABLED.get(conf))
            .extensionsEnabled(ScrKeys.EXTENSIONS_ENABLED.get(conf))
            .slotLowWatermark(ScrKeys.SLOT_POOL_LOW_WATERMARK.get(conf))
            .slotWaitMs(ScrKeys.SLOT_POOL_MAX_ALLOCATION_WAIT_MS.get(conf))
            .scratchBytes(ScrKeys.READ_SCRATCH_BYTES.get(conf))
            .mappedReads(mappedReads(conf))
            .clientName("scr_" + context + "_" + ProcessHandle.current().pid())
            .fallbacks(this::countFallback)
            .counters(counters)
            .build();
    this.fdBudgetWarning = new FdBudgetWarning(context, ticker, this::cacheStats);
    this.prefetchExecutor = prefetchExecutor(context, prefetchThreads, prefetchQueue);
    this.metrics = new ScrClientMetrics(this, counters, pool, ticker);
    this.diagnostics = new ScrClientDiagnostics(context, metrics, settings);
    this.metricsEnabled = ScrKeys.METRICS_ENABLED.get(conf);
    this.summaryIntervalSeconds = ScrKeys.METRICS_SUMMARY_INTERVAL_SECONDS.get(conf);
  }

  /**
   * Starts what watches the engine: the metrics2 source and the summary line. Called once, by the
   * first acquire, under the registry lock.
   */
  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private void startObservability() {
    if (metricsEnabled) {
      metrics.register();
    }
    diagnostics.register();
    summary = SummaryReporter.start(context, metrics::snapshot, summaryIntervalSeconds);
  }

  /** Stops what {@link #startObservability} started. */
  private void stopObservability(SummaryReporter reporter) {
    if (reporter != null) {
      reporter.close();
    }
    metrics.unregister();
    diagnostics.unregister();
  }

  /**
   * The engine shared by context {@code scr.client.context} (default: {@code dfs.client.context}),
   * created on first acquire from {@code conf}; later acquires of the same context share it (their
   * configuration is not re-read). Reference-counted: call {@link #close()} once per acquire.
   *
   * <p>A later acquire whose scr settings differ from the engine's gets the engine anyway, as stock
   * gives a {@code ClientContext} to every client of its name: it is logged once per context and
   * set of differing keys (stock logs "Existing client context ... does not match requested
   * configuration"), since otherwise the second configuration's socket paths or limits would be
   * ignored without a word.
   */
  public static ScrClient acquire(Configuration conf) {
    String context = ScrKeys.CLIENT_CONTEXT.get(conf);
    if (context == null || context.isEmpty()) {
      context = ScrKeys.DFS_CLIENT_CONTEXT.get(conf);
    }
    synchronized (REGISTRY_LOCK) {
      ScrClient client = REGISTRY.get(context);
      if (client == null) {
        client = new ScrClient(conf, context, Ticker.systemTicker());
        REGISTRY.put(context, client);
        client.startObservability();
      } else {
        client.warnIfSettingsDiffer(conf);
      }
      client.references++;
      return client;
    }
  }

  /** The client keys of the catalogue as set in {@code conf} (raw text, unset keys absent). */
  private static Map<String, String> clientSettings(Configuration conf) {
    Map<String, String> out = new TreeMap<>();
    for (ScrKey<?> key : ScrKeys.all()) {
      if (key.name().startsWith("scr.shim.")) {
        continue; // the DataNode's keys: a client never reads them
      }
      String raw = conf.getTrimmed(key.name());
      if (raw != null) {
        out.put(key.name(), raw);
      }
    }
    return out;
  }

  @com.google.errorprone.annotations.concurrent.GuardedBy("REGISTRY_LOCK")
  private void warnIfSettingsDiffer(Configuration conf) {
    Map<String, String> requested = clientSettings(conf);
    if (requested.equals(settings)) {
      return;
    }
    Set<String> keys = new TreeSet<>(settings.keySet());
    keys.addAll(requested.keySet());
    List<String> differences = new ArrayList<>();
    for (String k : keys) {
      String inUse = settings.get(k);
      String asked = requested.get(k);
      if (!Objects.equals(inUse, asked)) {
        differences.add(
            k
                + "="
                + (inUse == null ? "(unset)" : inUse)
                + " in use, "
                + (asked == null ? "(unset)" : asked)
                + " requested");
      }
    }
    if (warnedDifferences.add(String.join(";", differences))) {
      LOG.warn(
          "The scr engine of client context '{}' already exists with other settings, and this"
              + " configuration shares it as is: {}. To give this configuration its own engine,"
              + " set scr.client.context (or dfs.client.context) to a name of its own",
          context,
          differences);
    }
  }

  private static List<String> socketPathTemplates(Configuration conf) {
    String explicit = ScrKeys.CLIENT_SOCKET_PATHS.get(conf);
    List<String> out = new ArrayList<>();
    String source = explicit != null ? explicit : ScrKeys.DFS_DOMAIN_SOCKET_PATH.get(conf);
    for (String p : source.split(",")) {
      String t = p.trim();
      if (!t.isEmpty()) {
        out.add(t);
      }
    }
    return Collections.unmodifiableList(out);
  }

  /** The port of {@code dfs.datanode.address}, or 0 when it names none (or an ephemeral one). */
  private static int configuredXferPort(Configuration conf) {
    String address = ScrKeys.DFS_DATANODE_ADDRESS.get(conf);
    if (address == null) {
      return 0;
    }
    int colon = address.lastIndexOf(':');
    try {
      int port = Integer.parseInt(address.substring(colon + 1).trim());
      return port > 0 && port <= 65535 ? port : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** The context name this engine is shared under. */
  public String context() {
    return context;
  }

  /**
   * The UNIX socket for short-circuit reads from this DataNode, or null when it is not on this
   * host, not configured, or backing off (the reason is counted).
   */
  public String socketPathFor(DatanodeInfo dn) {
    if (!enabled) {
      return fallback(FallbackReason.DISABLED);
    }
    if (closed) {
      return fallback(FallbackReason.CLOSED);
    }
    if (pathTemplates.isEmpty()) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    if (!isLocal(dn.getIpAddr())) {
      return fallback(FallbackReason.NOT_LOCAL);
    }
    String path = resolve(dn.getXferPort());
    if (path == null) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    if (backoff.isBackingOff(path)) {
      return fallback(FallbackReason.BACKING_OFF);
    }
    return path;
  }

  /**
   * The socket path for a DataNode with transfer port {@code xferPort}: the first template that
   * names {@code _PORT} (resolved), else the first template.
   */
  String resolve(int xferPort) {
    for (String t : pathTemplates) {
      if (t.contains("_PORT")) {
        return t.replace("_PORT", String.valueOf(xferPort));
      }
    }
    return pathTemplates.get(0);
  }

  /**
   * The socket paths of every DataNode on this host that the configuration names without a port to
   * resolve, plus the {@code _PORT} templates resolved against the socket files that exist (for
   * callers that do not know which DataNode holds a block: the replica accessor).
   *
   * <p>A secure layout may let clients traverse the socket directory but not list it (mode 0711).
   * Then {@code _PORT} is resolved with the transfer port {@code dfs.datanode.address} names (one
   * DataNode per host, the common case) and one WARN says so; with several DataNodes on the host
   * the operator lists their sockets in {@code scr.client.socket.paths}. Dropping the template
   * instead would make every read fall back without a word.
   */
  public List<String> localSocketPaths() {
    List<String> out = new ArrayList<>();
    String unmatched = null; // a _PORT template that matched no socket file, for the warning
    for (String t : pathTemplates) {
      if (!t.contains("_PORT")) {
        out.add(t);
        continue;
      }
      File template = new File(t);
      File dir = template.getParentFile();
      String name = template.getName();
      int at = name.indexOf("_PORT");
      String[] entries = dir == null || at < 0 ? null : directoryLister.apply(dir);
      if (entries == null && dir != null && at >= 0 && !dir.exists()) {
        // No such directory (as far as this user can see): no DataNode has bound a socket there.
        unmatched = t + " (directory " + dir + " does not exist)";
        continue;
      }
      if (entries == null) {
        String resolved = configuredXferPort > 0 ? resolve(t, configuredXferPort) : null;
        warnUnlistable(t, dir, at < 0, resolved);
        if (resolved != null) {
          out.add(resolved);
        }
        continue;
      }
      String prefix = name.substring(0, at);
      String suffix = name.substring(at + "_PORT".length());
      if (name.indexOf("_PORT", at + 1) >= 0) {
        continue;
      }
      int before = out.size();
      for (String e : entries) {
        if (e.startsWith(prefix)
            && e.endsWith(suffix)
            && e.length() > prefix.length() + suffix.length()) {
          String port = e.substring(prefix.length(), e.length() - suffix.length());
          if (port.chars().allMatch(Character::isDigit)) {
            out.add(new File(dir, e).getPath());
          }
        }
      }
      if (out.size() == before) {
        unmatched = t + " (no matching file in " + dir + ")";
      }
    }
    if (out.isEmpty() && unmatched != null) {
      warnNoSocket(unmatched);
    }
    return out;
  }

  /**
   * Logs once per engine that no socket file matches the configured templates: every read the
   * accessor serves then falls back (NOT_CONFIGURED), which would otherwise go unsaid.
   */
  private void warnNoSocket(String what) {
    if (!noSocketWarned.compareAndSet(false, true)) {
      return;
    }
    LOG.warn(
        "no DataNode socket on this host matches {} = {}: short-circuit reads through the replica"
            + " accessor fall back to TCP (FallbackReason NOT_CONFIGURED) until one appears. A"
            + " stock DataNode binds its socket only when dfs.client.read.shortcircuit=true in its"
            + " own hdfs-site.xml (and libhadoop loads); the scr shim binds scr.shim.socket.path."
            + " The DataNode log says 'Listening on UNIX domain socket' with the path it uses",
        templateKey,
        what);
  }

  private static String resolve(String template, int port) {
    return template.replace("_PORT", String.valueOf(port));
  }

  /** Logs once per engine that a {@code _PORT} template could not be expanded by listing. */
  private void warnUnlistable(String template, File dir, boolean portInDirectory, String resolved) {
    if (!unlistableWarned.compareAndSet(false, true)) {
      return;
    }
    String why =
        portInDirectory
            ? "its _PORT is in a directory name, so the sockets cannot be found by listing"
            : "this user cannot list the socket directory " + dir + " (e.g. mode 0711)";
    String instead =
        resolved != null
            ? "scr uses the DataNode transfer port of "
                + ScrKeys.DFS_DATANODE_ADDRESS.name()
                + " ("
                + configuredXferPort
                + ") and asks only "
                + resolved
            : "and "
                + ScrKeys.DFS_DATANODE_ADDRESS.name()
                + " names no fixed port, so reads whose DataNode is not known (the replica"
                + " accessor) fall back to TCP";
    LOG.warn(
        "socket path template {} ({}): {}; {}. To let scr find several DataNodes on this host,"
            + " list each socket in {} (comma-separated, explicit paths)",
        template,
        templateKey,
        why,
        instead,
        ScrKeys.CLIENT_SOCKET_PATHS.name());
  }

  /**
   * {@link #localSocketPaths()} as listed at most {@link #SOCKET_LISTING_NANOS} ago, as a new list
   * the caller may change: with a {@code _PORT} template the listing reads a directory, which every
   * read of a block no local DataNode holds would otherwise pay (the accessor asks on every read).
   * A DataNode started since is found a second later.
   */
  private List<String> localSocketPathsRecently() {
    long now = ticker.read();
    SocketListing l = socketListing;
    if (l == null || now - l.takenAtNanos >= SOCKET_LISTING_NANOS) {
      l = new SocketListing(now, localSocketPaths());
      socketListing = l;
    }
    return new ArrayList<>(l.paths);
  }

  /** One listing of the local sockets and when it was taken. Immutable. */
  private static final class SocketListing {
    final long takenAtNanos;
    final List<String> paths;

    SocketListing(long takenAtNanos, List<String> paths) {
      this.takenAtNanos = takenAtNanos;
      this.paths = Collections.unmodifiableList(new ArrayList<>(paths));
    }
  }

  /** Whether {@code path} is backing off now (for callers that choose the path themselves). */
  public boolean isBackingOff(String path) {
    return backoff.isBackingOff(path);
  }

  private boolean isLocal(String ip) {
    Boolean local = localAddresses.get(ip);
    if (local == null) {
      try {
        local = NetUtils.isLocalAddress(InetAddress.getByName(ip));
      } catch (UnknownHostException e) {
        local = Boolean.FALSE;
      }
      localAddresses.put(ip, local);
    }
    return local;
  }

  /**
   * Leases the replica from the DataNode at {@code socketPath}, opening it on a cache miss. Null
   * when it cannot be read locally right now (reason counted; the caller falls back to the stock
   * path).
   *
   * @throws org.apache.hadoop.security.token.SecretManager.InvalidToken so the caller can refetch
   *     the token
   */
  public ReplicaLease lease(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath)
      throws IOException {
    return lease(block, token, socketPath, null, null);
  }

  /** As {@link #lease(ExtendedBlock, Token, String)}, naming the HDFS file in checksum errors. */
  public ReplicaLease lease(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    return lease(block, token, socketPath, fileName, null);
  }

  /**
   * As {@link #lease(ExtendedBlock, Token, String, String)}, reopening {@code reuse} instead of
   * allocating a lease: the allocation-free form for the read path. A cache hit (the replica is
   * open, its slot VALID, its generation stamp the block's) takes no lock, does no I/O, reads no
   * clock and allocates nothing; the backoff of {@code socketPath} is only consulted on a miss.
   *
   * <pre>{@code
   * ReplicaLease lease = scr.lease(block, token, path, file, spare); // spare: per thread
   * if (lease != null) {
   *   spare = lease;
   *   try { ... lease.read(...) ... } finally { lease.close(); }
   * }
   * }</pre>
   *
   * @param reuse null (a new lease is made), or a <em>closed</em> lease that this engine returned
   *     earlier and that nothing else refers to any more: reopening is the owner's explicit act, so
   *     the lease contract (idempotent close, closed leases unusable) holds for every opening
   * @return the lease ({@code reuse} itself when given), or null (reason counted)
   * @throws IllegalArgumentException if {@code reuse} came from another engine
   * @throws IllegalStateException if {@code reuse} is still open
   */
  public ReplicaLease lease(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      ReplicaLease reuse)
      throws IOException {
    if (closed) {
      return fallback(FallbackReason.CLOSED);
    }
    return replicas.lease(block, token, socketPath, fileName, reuse);
  }

  /**
   * As {@link #lease(ExtendedBlock, Token, String, String, ReplicaLease)} with this thread's spare
   * lease object, for callers that cannot keep one per thread themselves (a stream read by many
   * threads, many streams read by one thread): give the lease back with {@link
   * #closeToThreadSpare}, and a cache hit allocates nothing. A thread keeps at most one spare per
   * engine; a second lease open on the same thread at once is simply a new object.
   *
   * @return the lease, or null (reason counted)
   */
  public ReplicaLease leaseWithThreadSpare(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    ThreadLocal<LeaseSpare> local = spares;
    if (local == null) {
      return fallback(FallbackReason.CLOSED);
    }
    LeaseSpare spare = local.get();
    if (spare == null) {
      spare = new LeaseSpare();
      spareHolders.add(spare);
      local.set(spare);
    }
    ReplicaLease reuse = spare.lease;
    if (reuse != null) {
      spare.take(); // taken: a nested lease on this thread must not reopen it
    }
    // On null or an exception the spare is dropped rather than kept: it is closed then, but a
    // failure path is not worth proving that for.
    return lease(block, token, socketPath, fileName, reuse);
  }

  /**
   * Closes {@code lease} (from {@link #leaseWithThreadSpare}) and keeps it as this thread's spare
   * if the thread has none. The caller must not touch it afterwards.
   */
  public void closeToThreadSpare(ReplicaLease lease) {
    lease.close();
    ThreadLocal<LeaseSpare> local = spares;
    if (local != null) {
      LeaseSpare spare = local.get();
      if (spare != null && spare.lease == null) {
        spare.lease = lease;
        // Written before reading the flag, as close() writes the flag before emptying holders:
        // one of the two sees the other, so no spare outlives the engine.
        if (closed) {
          spare.lease = null;
        }
      }
    }
  }

  /**
   * The socket path {@link #socketPathFor} would give for {@code dn} if nothing were backing off
   * and the engine open: null when the DataNode is not on this host or no path is configured.
   * Counts nothing; for mapping a {@link ReplicaLease#socketPath()} back to its DataNode.
   */
  public String socketPathOf(DatanodeInfo dn) {
    if (pathTemplates.isEmpty() || !isLocal(dn.getIpAddr())) {
      return null;
    }
    return resolve(dn.getXferPort());
  }

  /**
   * Why {@link #socketPathOf} has no socket for {@code dn}: {@link FallbackReason#DISABLED}, {@link
   * FallbackReason#NOT_CONFIGURED} or {@link FallbackReason#NOT_LOCAL}; null when it has one.
   * Counts nothing and ignores backoff (a backoff is a property of the moment, checked per read):
   * for a caller that decides once per block and counts per read ({@link #recordFallback}).
   */
  public FallbackReason unreachableReason(DatanodeInfo dn) {
    if (!enabled) {
      return FallbackReason.DISABLED;
    }
    if (pathTemplates.isEmpty()) {
      return FallbackReason.NOT_CONFIGURED;
    }
    return isLocal(dn.getIpAddr()) ? null : FallbackReason.NOT_LOCAL;
  }

  /**
   * Counts one read that went the stock way for {@code reason}, for callers that decided it
   * themselves (a stream reading a block no local DataNode holds counts {@link
   * FallbackReason#NOT_LOCAL} once per read).
   */
  public void recordFallback(FallbackReason reason) {
    countFallback(reason);
  }

  /**
   * A lease on the replica of {@code block} if the engine has it open already (valid, of the
   * block's generation stamp), whichever DataNode it came from; null otherwise. No I/O, no lock, no
   * fallback counted: callers try this first and go on to {@link #lease} on null.
   */
  public ReplicaLease leaseIfCached(ExtendedBlock block, String fileName) {
    if (closed) {
      return null;
    }
    return notKnownCorrupt(block, replicas.leaseIfCached(block, fileName));
  }

  /**
   * Records that the replica of {@code block} from the DataNode at {@code socketPath} failed
   * checksum verification, for callers that cannot report it to the NameNode against the right
   * DataNode themselves (the replica accessor is not told which DataNode the stock stream chose):
   * the cached replica is dropped, and {@link #leaseIfCached} and {@link #leaseFromLocalDataNode}
   * no longer serve that DataNode's replica of that block and generation stamp, so the stock
   * reader's retry reads another replica (and reports this one itself when it reads it the stock
   * way). Remembers at most {@value #MAX_KNOWN_CORRUPT} replicas per engine (then starts over).
   */
  public void replicaFailedChecksum(ExtendedBlock block, String socketPath) {
    if (knownCorrupt.size() >= MAX_KNOWN_CORRUPT) {
      knownCorrupt.clear();
    }
    knownCorrupt.add(corruptKey(block, socketPath));
    replicas.invalidate(
        new io.scr.core.replica.ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath));
  }

  private boolean isKnownCorrupt(ExtendedBlock block, String socketPath) {
    return !knownCorrupt.isEmpty() && knownCorrupt.contains(corruptKey(block, socketPath));
  }

  /** {@code lease}, or null (the lease closed) when it is a replica known to be corrupt. */
  private ReplicaLease notKnownCorrupt(ExtendedBlock block, ReplicaLease lease) {
    if (lease != null && isKnownCorrupt(block, lease.socketPath())) {
      lease.close();
      return null;
    }
    return lease;
  }

  private static String corruptKey(ExtendedBlock block, String socketPath) {
    return block.getBlockPoolId()
        + ":"
        + block.getBlockId()
        + "_"
        + block.getGenerationStamp()
        + "@"
        + socketPath;
  }

  /**
   * Leases the replica of {@code block} from whichever DataNode on this host holds it, for callers
   * that do not know which (the replica accessor is told the block, not the DataNode). A cached
   * replica is served as by {@link #leaseIfCached}. On a miss the sockets of {@link
   * #localSocketPaths()} that are not backing off are asked in turn, the one that last served this
   * block or file first ({@link DataNodeHints}); a DataNode that does not hold the block answers
   * with a refusal, which costs one round trip and is counted as a {@linkplain
   * #misdirectedRequestCount() misdirected request}, not as a fallback. That refusal is remembered
   * ({@link AbsentReplicas}, per block, generation stamp and DataNode, for a bounded time): each
   * local DataNode is asked at most once per block, so a block only remote DataNodes hold costs no
   * request after the first read. Null (the last reason counted) when no local DataNode serves it.
   *
   * @throws org.apache.hadoop.security.token.SecretManager.InvalidToken so the caller can refetch
   *     the token
   */
  public ReplicaLease leaseFromLocalDataNode(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String fileName) throws IOException {
    if (closed) {
      return fallback(FallbackReason.CLOSED);
    }
    ReplicaLease cached = notKnownCorrupt(block, replicas.leaseIfCached(block, fileName));
    if (cached != null) {
      return cached;
    }
    List<String> paths = localSocketPathsRecently();
    if (!knownCorrupt.isEmpty()) {
      paths.removeIf(p -> isKnownCorrupt(block, p));
    }
    if (paths.isEmpty()) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    // A DataNode that said it has no such replica is not asked again (within the memory's
    // expiry): a block held only by a remote DataNode then costs the stock path and nothing more.
    AbsentReplicas absent = replicas.absentReplicas();
    paths.removeIf(p -> absent.isAbsent(block, p));
    if (paths.isEmpty()) {
      return fallback(FallbackReason.BLOCK_REFUSED);
    }
    String bpid = block.getBlockPoolId();
    long id = block.getBlockId();
    String preferred = hints.preferred(bpid, id, fileName);
    if (preferred != null && paths.size() > 1 && paths.remove(preferred)) {
      paths.add(0, preferred);
    }
    FallbackReason[] last = new FallbackReason[1];
    boolean refused = false;
    for (int i = 0; i < paths.size(); i++) {
      String path = paths.get(i);
      last[0] = null;
      ReplicaLease lease = replicas.lease(block, token, path, fileName, null, r -> last[0] = r);
      if (lease != null) {
        if (paths.size() > 1) {
          hints.served(bpid, id, fileName, path);
        }
        return lease;
      }
      if (last[0] == FallbackReason.BLOCK_REFUSED) {
        refused = true;
        if (i < paths.size() - 1) {
          misdirected.increment();
        }
      }
    }
    if (refused || last[0] == null) {
      return fallback(FallbackReason.BLOCK_REFUSED);
    }
    return fallback(last[0]);
  }

  /**
   * Fd requests that {@link #leaseFromLocalDataNode} sent to a local DataNode that did not hold the
   * block before another one served it (several DataNodes on this host): each cost one round trip.
   */
  public long misdirectedRequestCount() {
    return misdirected.sum();
  }

  private <T> T fallback(FallbackReason reason) {
    countFallback(reason);
    return null;
  }

  private void countFallback(FallbackReason reason) {
    fallbacks.get(reason).increment();
    if (reason == FallbackReason.FD_BUDGET) {
      fdBudgetWarning.fallback();
    }
  }

  /** How often reads fell back for {@code reason}. */
  public long fallbackCount(FallbackReason reason) {
    return fallbacks.get(reason).sum();
  }

  /** Per-path, per-failure-class backoff counters with the last reason. */
  public List<PathBackoff.Status> backoffStatus() {
    return backoff.snapshot();
  }

  /**
   * Which DataNode socket paths speak the scr shim's protocol extensions, and how often they were
   * asked (see {@code scr.client.extensions.enabled}).
   */
  public io.scr.core.net.PeerExtensions extensions() {
    return replicas.extensions();
  }

  /**
   * The memory of blocks local DataNodes refused as not held there: neither {@link #lease} nor
   * {@link #leaseFromLocalDataNode} asks such a DataNode again for that block within the memory's
   * expiry.
   */
  public AbsentReplicas absentReplicas() {
    return replicas.absentReplicas();
  }

  private static java.util.concurrent.ThreadPoolExecutor prefetchExecutor(
      String context, int threads, int queue) {
    java.util.concurrent.atomic.AtomicInteger serial =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.ThreadPoolExecutor executor =
        new java.util.concurrent.ThreadPoolExecutor(
            threads,
            threads,
            30,
            java.util.concurrent.TimeUnit.SECONDS,
            new java.util.concurrent.ArrayBlockingQueue<>(queue),
            r -> {
              Thread t = new Thread(r, "scr-prefetch-" + context + "-" + serial.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            new java.util.concurrent.ThreadPoolExecutor.AbortPolicy());
    executor.allowCoreThreadTimeOut(true); // no thread exists until a stream prefetches
    return executor;
  }

  /**
   * Runs {@code task} (one replica open ahead of its first read) on this engine's prefetch threads,
   * unless the engine is closed or the queue ({@code scr.client.prefetch.queue-size}) is full:
   * never blocks. The task must count what it did with {@link #recordPrefetched} or {@link
   * #recordPrefetchSkipped}; a task not accepted is the caller's to count.
   *
   * @return whether the task was queued
   */
  public boolean submitPrefetch(Runnable task) {
    if (closed) {
      return false;
    }
    try {
      prefetchExecutor.execute(task);
      return true;
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return false; // full, or shut down by a concurrent close
    }
  }

  /**
   * Opens the replica of {@code block} from the DataNode at {@code socketPath} ahead of its first
   * read and leaves it cached (prefetch on open), on the calling thread; counts {@code
   * ReplicasPrefetched} when it opened it. It shares the cache's one load per replica with readers
   * and consults the backoff and the absent-replica memory as a read does (see {@link
   * ReplicaManager#prefetch}); counts no fallback.
   *
   * @throws IOException an invalid token or an interrupt; every other failure is a {@code
   *     NOT_OPENED} result
   */
  public ReplicaManager.PrefetchResult prefetch(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    ReplicaManager.PrefetchResult r = replicas.prefetch(block, token, socketPath, fileName);
    if (r == ReplicaManager.PrefetchResult.OPENED) {
      counters.recordPrefetched();
    }
    return r;
  }

  /**
   * As {@link #prefetch} for several blocks of one DataNode in one batched exchange, for a peer
   * whose {@link #extensions()} offer {@code batch-fds} (see {@link ReplicaManager#prefetchBatch});
   * counts {@code ReplicasPrefetched} for each block it opened.
   */
  public ReplicaManager.PrefetchResult[] prefetchBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      String fileName)
      throws IOException {
    ReplicaManager.PrefetchResult[] r =
        replicas.prefetchBatch(blocks, tokens, socketPath, fileName);
    for (ReplicaManager.PrefetchResult x : r) {
      if (x == ReplicaManager.PrefetchResult.OPENED) {
        counters.recordPrefetched();
      }
    }
    return r;
  }

  /** Counts {@code blocks} blocks a prefetch did not open ({@code PrefetchSkipped}). */
  public void recordPrefetchSkipped(int blocks) {
    counters.recordPrefetchSkipped(blocks);
  }

  /** The open-replica cache's counters. */
  public LeaseCacheStats cacheStats() {
    return replicas.cacheStats();
  }

  /**
   * Mapped reads' policy, budget and counters ({@code MappedReads}, {@code MappedReadFallbacks}),
   * or null when {@link ScrKeys#READ_MAPPED_ENABLED} is off.
   */
  public io.scr.core.read.MappedReads mappedReads() {
    return replicas.mappedReads();
  }

  /** The mapped-read policy {@code conf} asks for, or null (off). */
  private static io.scr.core.read.MappedReads mappedReads(Configuration conf) {
    if (!ScrKeys.READ_MAPPED_ENABLED.get(conf)) {
      return null;
    }
    int minReads = ScrKeys.READ_MAPPED_MIN_READS.get(conf);
    int maxMappings = ScrKeys.READ_MAPPED_MAX_MAPPINGS.get(conf);
    long maxBytes = ScrKeys.READ_MAPPED_MAX_MAPPED_BYTES.get(conf);
    if (minReads < 1 || maxMappings < 0 || maxBytes < 0) {
      throw new IllegalArgumentException(
          ScrKeys.READ_MAPPED_MIN_READS.name()
              + "="
              + minReads
              + ", "
              + ScrKeys.READ_MAPPED_MAX_MAPPINGS.name()
              + "="
              + maxMappings
              + ", "
              + ScrKeys.READ_MAPPED_MAX_MAPPED_BYTES.name()
              + "="
              + maxBytes
              + ": min-reads must be at least 1 and the limits not negative; turn mapped reads"
              + " off with "
              + ScrKeys.READ_MAPPED_ENABLED.name()
              + "=false instead");
    }
    return io.scr.core.read.MappedReads.of(
        io.scr.core.read.MappingBudget.of(maxMappings, maxBytes), minReads);
  }

  /** The slot pools' counters. */
  public List<io.scr.shm.SlotPoolStats> slotPoolStats() {
    return replicas.slotPoolStats();
  }

  /**
   * Every figure the metrics publish, now: reads and bytes per path, fallbacks by reason, cache,
   * slot pools, socket pool, backoff, replica open latency, process fds (see docs/metrics.md).
   */
  public ClientSnapshot metricsSnapshot() {
    return metrics.snapshot();
  }

  /**
   * Drops one reference; the last one closes the engine: cached replicas are closed (leased ones
   * when their lease closes), slot pools and their threads stop, segments and sockets close. Calls
   * beyond the acquires are ignored.
   */
  @Override
  public void close() {
    SummaryReporter reporter;
    synchronized (REGISTRY_LOCK) {
      if (references == 0) {
        return;
      }
      if (--references > 0) {
        return;
      }
      REGISTRY.remove(context, this);
      closed = true;
      spares = null;
      reporter = summary;
      summary = null;
    }
    synchronized (spareHolders) {
      for (LeaseSpare spare : spareHolders) {
        spare.lease = null; // each thread's map keeps an empty holder, nothing of the engine
      }
      spareHolders.clear();
    }
    stopObservability(reporter);
    prefetchExecutor.shutdown(); // queued prefetches see the engine closed and skip
    replicas.close();
  }

  /**
   * One thread's spare lease object: used by that thread; emptied by {@link #close()} from another.
   */
  private static final class LeaseSpare {
    private static final java.lang.invoke.VarHandle LEASE;

    static {
      try {
        LEASE =
            java.lang.invoke.MethodHandles.lookup()
                .findVarHandle(LeaseSpare.class, "lease", ReplicaLease.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    /**
     * Volatile for the hand-over with close (see closeToThreadSpare); the owner's own clear needs
     * no fence ({@link #take}): racing close's clear, both write null.
     */
    volatile ReplicaLease lease;

    void take() {
      LEASE.setOpaque(this, (ReplicaLease) null);
    }
  }

  @Override
  public String toString() {
    return "ScrClient{" + context + ", paths=" + pathTemplates + (closed ? ", closed}" : "}");
  }
}
