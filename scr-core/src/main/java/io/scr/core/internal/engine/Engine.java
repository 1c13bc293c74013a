package io.scr.core.internal.engine;

import io.scr.cache.LeaseCacheStats;
import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.ScrKeys;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.health.HealthPolicy;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.replica.AbsentReplicas;
import io.scr.core.internal.replica.LocalRead;
import io.scr.core.internal.replica.PrefetchResult;
import io.scr.core.internal.replica.ReplicaManager;
import io.scr.core.internal.replica.ReplicaSource;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.core.metrics.EngineState;
import io.scr.core.metrics.PartFigures;
import io.scr.core.metrics.ScrClientMetrics;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.HealthStatus;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * The short-circuit engine shared by every stream of one client context: it builds the parts from
 * one configuration, shares them under the context's name, and closes them with the last reference.
 * Obtain it with {@link #acquire(Configuration)}; each acquire needs one {@link #close()}; the last
 * close releases every fd, socket, segment and thread.
 *
 * <p>The parts: the replica layer ({@link ReplicaManager}; reads lease from its {@link
 * ReplicaSource} directly, not through this class), the local sockets ({@link LocalSockets}: which
 * socket reaches which DataNode), the fallback counters, the accessor's leases by block alone
 * ({@link AccessorLeases}), the prefetch threads ({@link PrefetchThreads}), and the metrics and
 * diagnostics views ({@link EngineObservability}).
 *
 * <p><b>Which socket.</b> {@link #socketPathFor} resolves the DataNode's socket from {@code
 * scr.client.socket.paths} (else {@code dfs.domain.socket.path}), replacing {@code _PORT} with the
 * DataNode's transfer port, and only for DataNodes on this host (an address of a local interface,
 * cached per address). With several DataNodes on one host each must have its own socket path,
 * distinguished by {@code _PORT}.
 *
 * <p>Thread-safety: thread-safe; every part is. {@link #socketPathFor} and a cache-hit {@link
 * #lease} take no lock other readers wait on. The shared instances and their reference counts are
 * {@link EngineRegistry}'s, behind its lock, taken only by acquire and close; the keys are read and
 * checked, and the parts built, by {@link EngineWiring}.
 */
public final class Engine implements Closeable, EngineState {
  private final String context;

  /** The client keys this engine was built from, to name differences of later acquires. */
  private final EngineSettings settings;

  private final boolean enabled;
  private final LocalSockets sockets;
  private final PathBackoff backoff;
  private final DomainSocketPool pool;
  private final ReplicaManager replicas;
  private final ReplicaSource source;
  private final FallbackCounters fallbacks;
  private final ClientCounters counters = new ClientCounters();
  private final AccessorLeases accessorLeases;
  private final PrefetchThreads prefetchThreads;

  private final EngineObservability observability;

  private volatile boolean closed;

  private final Ticker ticker;

  private final EngineSeams seams;

  Engine(Configuration conf, String context, Ticker ticker) {
    this(conf, context, ticker, File::list, EngineSeams.NONE);
  }

  Engine(
      Configuration conf,
      String context,
      Ticker ticker,
      java.util.function.Function<File, String[]> directoryLister) {
    this(conf, context, ticker, directoryLister, EngineSeams.NONE);
  }

  /**
   * As the other constructors, listing socket directories with {@code directoryLister} (null when a
   * directory cannot be listed; tests, which may run as root, pass their own) and holding threads
   * at {@code seams}.
   */
  Engine(
      Configuration conf,
      String context,
      Ticker ticker,
      java.util.function.Function<File, String[]> directoryLister,
      EngineSeams seams) {
    this.context = context;
    this.seams = java.util.Objects.requireNonNull(seams, "seams");
    this.settings = new EngineSettings(context, conf);
    this.ticker = ticker;
    this.fallbacks = new FallbackCounters(new FdBudgetWarning(context, ticker, this::cacheStats));
    EngineWiring.check(conf); // before any socket, thread or fd exists
    this.enabled = ScrKeys.CLIENT_ENABLED.get(conf::get);
    this.sockets = new LocalSockets(conf, ticker, directoryLister);
    this.backoff = EngineWiring.backoff(conf, ticker);
    DataNodeHealth health = DataNodeHealth.shared(HealthPolicy.from(conf));
    DomainSocketPool pool = EngineWiring.socketPool(conf, health, ticker);
    this.pool = pool;
    this.replicas =
        EngineWiring.replicaManager(
            conf, context, pool, backoff, ticker, fallbacks, counters, health, seams);
    this.source = replicas.source();
    this.accessorLeases = new AccessorLeases(replicas, sockets, fallbacks);
    this.prefetchThreads = EngineWiring.prefetchThreads(conf, context);
    this.observability =
        new EngineObservability(
            context,
            new ScrClientMetrics(this, counters, ticker),
            settings.asMap(),
            ScrKeys.METRICS_ENABLED.get(conf::get),
            ScrKeys.METRICS_SUMMARY_INTERVAL_SECONDS.get(conf::get));
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
  public static Engine acquire(Configuration conf) {
    return acquire(conf, null);
  }

  /**
   * As {@link #acquire(Configuration)}, but the context must have no engine yet: the new one holds
   * its threads at {@code seams}, and later acquires of the context share it. For tests that drive
   * a race through the whole client.
   *
   * @throws IllegalStateException the context already has an engine (built without these seams)
   */
  static Engine acquire(Configuration conf, EngineSeams seams) {
    return EngineRegistry.acquire(conf, seams);
  }

  /**
   * The engine of {@code conf}'s client context, without taking a reference: for code of this
   * product that holds a file system, an accessor or a {@link io.scr.core.ScrClient} of that
   * context and needs the engine's internals (its tests, the benchmarks).
   *
   * @throws IllegalStateException the context has no engine (nothing holds one)
   */
  public static Engine running(Configuration conf) {
    String context = EngineRegistry.contextOf(conf);
    Engine e = EngineRegistry.running(context);
    if (e == null) {
      throw new IllegalStateException("client context " + context + " has no engine");
    }
    return e;
  }

  /** Starts the metrics and diagnostics views; once, when the registry first shares the engine. */
  void startObservability() {
    observability.start();
  }

  /** Logs once per set of differing keys that a later acquire asked for other settings. */
  void warnIfSettingsDiffer(Configuration conf) {
    settings.warnIfDiffer(conf);
  }

  /** The context name this engine is shared under. */
  @Override
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
    if (sockets.templates().isEmpty()) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    if (!sockets.isLocal(dn.getIpAddr())) {
      return fallback(FallbackReason.NOT_LOCAL);
    }
    String path = sockets.resolve(dn.getXferPort());
    if (path == null) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    if (backoff.isBackingOff(path)) {
      return fallback(FallbackReason.BACKING_OFF);
    }
    return path;
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
    return sockets.localSocketPaths();
  }

  /**
   * The health of the local DataNodes, shared by every engine of the process: whether a DataNode
   * socket admits new replica opens now ({@link DataNodeHealth#admitsNewOpens}).
   */
  public DataNodeHealth dataNodeHealth() {
    return replicas.health();
  }

  /**
   * The health of the DataNode sockets this engine asked for replicas (the state is process-wide),
   * for metrics, the summary line and {@code scr doctor}.
   */
  @Override
  public List<HealthStatus> healthStatus() {
    return replicas.healthStatus();
  }

  /**
   * Whether the DataNode at {@code path} is suspect, unresponsive or dead now (process-wide), or
   * back on a probe's word only, until a request sent off the read path is answered in time: a
   * caller that chooses among DataNodes (the stock read of a {@code ScrFileSystem} stream) prefers
   * another.
   */
  public boolean isDataNodeUnwell(String path) {
    return replicas.health().unwell(path);
  }

  /** Whether {@code path} is backing off now (for callers that choose the path themselves). */
  public boolean isBackingOff(String path) {
    return backoff.isBackingOff(path);
  }

  /**
   * Leases the replica from the DataNode at {@code socketPath}, opening it on a cache miss, naming
   * {@code fileName} (may be null) in checksum errors, and reopening {@code reuse} instead of
   * allocating a lease: the allocation-free form for callers that read through leases themselves. A
   * cache hit (the replica is open, its slot VALID, its generation stamp the block's) takes no
   * lock, does no I/O, reads no clock and allocates nothing; the backoff of {@code socketPath} is
   * only consulted on a miss. Null when the replica cannot be read locally right now (reason
   * counted; the caller falls back to the stock path).
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
    return source.lease(block, token, socketPath, fileName, reuse, fallbacks);
  }

  /** Where replicas are leased (the read contexts, zero-copy reads' own leases). */
  public ReplicaSource replicaSource() {
    return source;
  }

  /** The one local read both drop-ins use: a cache hit passes through no method of this class. */
  public LocalRead localRead() {
    return replicas.localRead();
  }

  /**
   * The socket path {@link #socketPathFor} would give for {@code dn} if nothing were backing off
   * and the engine open: null when the DataNode is not on this host or no path is configured.
   * Counts nothing; for mapping a {@link ReplicaLease#socketPath()} back to its DataNode.
   */
  public String socketPathOf(DatanodeInfo dn) {
    return sockets.socketPathOf(dn);
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
    if (sockets.templates().isEmpty()) {
      return FallbackReason.NOT_CONFIGURED;
    }
    return sockets.isLocal(dn.getIpAddr()) ? null : FallbackReason.NOT_LOCAL;
  }

  /**
   * Counts one read that went the stock way for {@code reason}, for callers that decided it
   * themselves (a stream reading a block no local DataNode holds counts {@link
   * FallbackReason#NOT_LOCAL} once per read).
   */
  public void recordFallback(FallbackReason reason) {
    fallbacks.accept(reason);
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
    return accessorLeases.leaseIfCached(block, fileName);
  }

  /**
   * Records that the replica of {@code block} from the DataNode at {@code socketPath} failed
   * checksum verification, for callers that cannot report it to the NameNode against the right
   * DataNode themselves (the replica accessor is not told which DataNode the stock stream chose):
   * the cached replica is dropped, and {@link #leaseIfCached} and {@link #leaseFromLocalDataNode}
   * no longer serve that DataNode's replica of that block and generation stamp, so the stock
   * reader's retry reads another replica (and reports this one itself when it reads it the stock
   * way). Remembers at most {@value CorruptReplicas#MAX} replicas per engine (then starts over).
   */
  public void replicaFailedChecksum(ExtendedBlock block, String socketPath) {
    accessorLeases.replicaFailedChecksum(block, socketPath);
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
    return accessorLeases.leaseFromLocalDataNode(block, token, fileName);
  }

  /**
   * Fd requests that {@link #leaseFromLocalDataNode} sent to a local DataNode that did not hold the
   * block before another one served it (several DataNodes on this host): each cost one round trip.
   */
  public long misdirectedRequestCount() {
    return accessorLeases.misdirectedRequestCount();
  }

  private <T> T fallback(FallbackReason reason) {
    fallbacks.accept(reason);
    return null;
  }

  /** How often reads fell back for {@code reason}. */
  @Override
  public long fallbackCount(FallbackReason reason) {
    return fallbacks.count(reason);
  }

  /** Per-path, per-failure-class backoff counters with the last reason. */
  @Override
  public List<BackoffStatus> backoffStatus() {
    return backoff.snapshot();
  }

  /**
   * Which DataNode socket paths speak the scr shim's protocol extensions, and how often they were
   * asked (see {@code scr.client.extensions.enabled}).
   */
  public io.scr.core.internal.net.PeerExtensions extensions() {
    return replicas.extensions();
  }

  /** How this engine reads blocks being written (up to a reader's visible length). */
  public io.scr.core.internal.replica.TailReads tailReads() {
    return replicaSource().tailReads();
  }

  /**
   * The memory of blocks local DataNodes refused as not held there: neither {@link #lease} nor
   * {@link #leaseFromLocalDataNode} asks such a DataNode again for that block within the memory's
   * expiry.
   */
  public AbsentReplicas absentReplicas() {
    return replicas.absentReplicas();
  }

  /**
   * Open replicas read now although their DataNode went away, until a DataNode back on their socket
   * vouches for them again ({@link ScrKeys#REPLICA_OUTLIVE_DATANODE}).
   */
  @Override
  public int orphanedReplicas() {
    return replicas.orphanedReplicas();
  }

  /** Where this engine's threads may be held ({@link EngineSeams#NONE} unless a test built it). */
  public EngineSeams seams() {
    return seams;
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
    return prefetchThreads.submit(task);
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
  public PrefetchResult prefetch(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    PrefetchResult r = replicas.prefetch(block, token, socketPath, fileName);
    if (r == PrefetchResult.OPENED) {
      counters.recordPrefetched();
    }
    return r;
  }

  /**
   * As {@link #prefetch} for several blocks of one DataNode in one batched exchange, for a peer
   * whose {@link #extensions()} offer {@code batch-fds} (see {@link ReplicaManager#prefetchBatch});
   * counts {@code ReplicasPrefetched} for each block it opened.
   */
  public PrefetchResult[] prefetchBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      String fileName)
      throws IOException {
    PrefetchResult[] r = replicas.prefetchBatch(blocks, tokens, socketPath, fileName);
    for (PrefetchResult x : r) {
      if (x == PrefetchResult.OPENED) {
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
  @Override
  public LeaseCacheStats cacheStats() {
    return replicas.cacheStats();
  }

  /**
   * Mapped reads' policy, budget and counters ({@code MappedReads}, {@code MappedReadFallbacks}),
   * or null when {@link ScrKeys#READ_MAPPED_ENABLED} is off.
   */
  public io.scr.core.internal.read.MappedReads mappedReads() {
    return replicas.mappedReads();
  }

  @Override
  public void reportParts(PartFigures out) {
    out.sockets(
        pool.connectCount(),
        pool.connectFailureCount(),
        pool.reuseCount(),
        pool.staleRetryCount(),
        pool.idleConnectionCount());
    io.scr.core.internal.read.MappedReads mapped = replicas.mappedReads();
    if (mapped != null) {
      out.mappedReads(mapped.reads(), mapped.fallbacks(), mapped.budget().mappings());
    } else {
      out.mappedReads(0, 0, 0);
    }
    io.scr.core.internal.net.PeerExtensions ext = replicas.extensions();
    out.extensions(ext.probeCount(), ext.extendedPathCount(), ext.extensionFailureCount());
    io.scr.core.internal.replica.TailReads tail = replicaSource().tailReads();
    out.tailReads(tail.stateRequests(), tail.notReadyCount());
    AbsentReplicas absent = replicas.absentReplicas();
    out.absentReplicas(absent.rememberedCount(), absent.avoidedCount());
  }

  /** The slot pools' counters. */
  @Override
  public List<io.scr.shm.SlotPoolStats> slotPoolStats() {
    return replicas.slotPoolStats();
  }

  /**
   * Every figure the metrics publish, now: reads and bytes per path, fallbacks by reason, cache,
   * slot pools, socket pool, backoff, replica open latency, process fds (see docs/metrics.md).
   */
  public ClientSnapshot metricsSnapshot() {
    return observability.snapshot();
  }

  /**
   * Drops one reference; the last one closes the engine: cached replicas are closed (leased ones
   * when their lease closes), slot pools and their threads stop, segments and sockets close. Calls
   * beyond the acquires are ignored.
   */
  @Override
  public void close() {
    if (!EngineRegistry.release(this)) {
      return;
    }
    closed = true;
    observability.stop();
    prefetchThreads.shutdown(); // queued prefetches see the engine closed and skip
    replicas.close();
  }

  @Override
  public String toString() {
    return "Engine{" + context + ", paths=" + sockets.templates() + (closed ? ", closed}" : "}");
  }
}
