package io.scr.core.internal.replica;

import io.scr.cache.LeaseCache;
import io.scr.cache.LeaseCacheConfig;
import io.scr.cache.LeaseCacheStats;
import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.ScrKeys;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.read.LocalBlockReader;
import io.scr.core.internal.read.MappedReads;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.ClientCounters;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;

/**
 * Opens, caches and leases local replicas: builds the parts of the replica layer from one
 * configuration and closes them in order. The parts, each with one job:
 *
 * <ul>
 *   <li>{@link ReplicaSource}: every lease, hit or miss, and the per-thread read contexts;
 *   <li>{@link ReplicaOpener}: the miss path (slot, op 87, fds, meta header);
 *   <li>{@link OpenFailures}: what a failed open means for the path (backoff) and the read;
 *   <li>{@link Prefetcher}: prefetch on open, one by one or batched;
 *   <li>{@link Endpoints}: one {@link DataNodeEndpoint} per socket path, its slot pool, the segment
 *       watcher, and the closed gate.
 * </ul>
 *
 * <p>Concurrency: thread-safe; every part is. {@link #close()} closes the source (no lease after
 * it; the per-thread contexts dropped), shuts the gate and closes the slot pools, then the cache
 * (idle replicas now, leased ones when released), the segment watcher and the socket pool; it is
 * idempotent.
 *
 * <p>Why the pools first: a closed pool tells the DataNode nothing more and frees released slots
 * locally, returning each segment once its last slot is back, which makes the DataNode drop the
 * segment and every slot in it at once. Closed the other way round, the pools' maintenance threads
 * told the DataNode each slot of every replica the cache closed (a closing engine with 2,048
 * replicas: 16 batched releases of 128 to an scr shim, each 124 µs at the median and 4.9 ms at p99
 * on its workers, or 2,048 op-88 requests to a stock DataNode), work the DataNode did while serving
 * other clients' opens (measured under ReplicaOpenBenchmark, mode B).
 */
public final class ReplicaManager implements Closeable {
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final PathBackoff backoff;
  private final DataNodeHealth health;
  private final ReplicaOpener opener;
  private final LeaseCache<ReplicaKey, Replica> cache;
  private final MappedReads mappedReads;
  private final AbsentReplicas absent;
  private final Endpoints endpoints;

  /** This engine's registration for DataNodes that answer again ({@link #close} ends it). */
  private final DataNodeHealth.Registration recoveryListener;

  private final ReplicaSource source;
  private final LocalRead localRead;
  private final Prefetcher prefetcher;

  private ReplicaManager(Builder b) {
    this.pool = b.pool;
    this.health =
        b.health != null
            ? b.health
            : DataNodeHealth.shared(io.scr.core.internal.health.HealthPolicy.defaults());
    DataNodeHealth h = this.health;
    this.extensions =
        new PeerExtensions(b.pool, b.extensionsEnabled, (path, f) -> h.offersPing(path, f.ping()));
    this.backoff = b.backoff;
    this.mappedReads = b.mappedReads;
    this.absent =
        b.absent != null ? b.absent : AbsentReplicas.newBuilder().ticker(b.ticker).build();
    LeaseCacheConfig.Builder cc =
        LeaseCacheConfig.newBuilder()
            .name("scr-cache-" + b.name)
            .capacityKey(ScrKeys.CACHE_CAPACITY.name())
            .idleExpiry(Duration.ofMillis(b.idleExpiryMs))
            .ticker(b.ticker);
    if (b.capacity > 0) {
      cc.capacity(b.capacity);
    }
    if (b.fdBudget > 0) {
      cc.fdBudget(b.fdBudget);
    }
    this.cache = LeaseCache.create(cc.build());
    this.endpoints =
        new Endpoints(
            b.name,
            b.pool,
            extensions,
            b.counters,
            b.backoff,
            b.clientName,
            b.shmEnabled,
            b.slotLowWatermark,
            Duration.ofMillis(b.slotWaitMs),
            b.ticker,
            b.outliveDataNode,
            TimeUnit.MILLISECONDS.toNanos(b.staleThresholdMs),
            this.health::faltered,
            // Segment requests are sent off the read path (the refill thread): also while the
            // DataNode is on trial, where they help prove it.
            path -> h.state(path) == io.scr.core.stats.HealthState.HEALTHY);
    this.recoveryListener = this.health.onRecovery(endpoints::dataNodeAnswers);
    OpenFailures failures = new OpenFailures(b.backoff, endpoints::isClosing);
    this.opener =
        new ReplicaOpener(
            b.pool,
            endpoints,
            failures,
            b.backoff,
            absent,
            b.counters,
            b.ticker,
            TimeUnit.MILLISECONDS.toNanos(b.staleThresholdMs),
            b.slotWaitMs,
            health);
    LocalBlockReader reader = new LocalBlockReader(b.mappedReads);
    this.source =
        new ReplicaSource(
            b.name,
            cache,
            reader,
            b.scratchBytes,
            opener,
            b.backoff,
            absent,
            b.counters,
            b.fallbacks,
            b.missHook,
            new TailReads(b.pool, extensions, cache, this.health, b.ticker));
    this.localRead = new LocalRead(source);
    this.prefetcher =
        new Prefetcher(
            cache,
            source,
            opener,
            failures,
            endpoints,
            b.pool,
            extensions,
            b.backoff,
            absent,
            b.counters,
            b.ticker);
  }

  /** A builder; the socket pool and the backoff are required. */
  public static Builder newBuilder(String name, DomainSocketPool pool, PathBackoff backoff) {
    return new Builder(name, pool, backoff);
  }

  /** Where every lease is made. */
  public ReplicaSource source() {
    return source;
  }

  /** The one local read, for both drop-ins ({@link LocalRead}). */
  public LocalRead localRead() {
    return localRead;
  }

  /**
   * A lease on the replica of {@code block} if one is cached, valid and of the block's generation
   * stamp, from whichever DataNode this manager has talked to; null otherwise. No I/O, no fallback
   * counted.
   */
  public ReplicaLease leaseIfCached(ExtendedBlock block, String fileName) {
    return source.leaseIfCached(block, fileName, endpoints.paths());
  }

  /**
   * Opens the replica of {@code block} ahead of its first read and leaves it in the cache (prefetch
   * on open), on the calling thread. It shares the cache's single load per replica with readers,
   * and consults the absent-replica memory and the backoff as a read does, and once more inside the
   * load, so a prefetch and a read of a block the DataNode refuses cost one request between them.
   * No fallback is counted.
   *
   * @throws InvalidToken when the DataNode rejected the block token
   * @throws java.io.InterruptedIOException if the thread was interrupted
   */
  public PrefetchResult prefetch(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    return prefetcher.prefetch(block, token, socketPath, fileName);
  }

  /**
   * As {@link #prefetch} for several blocks of one DataNode in one op-127 BATCH_FDS exchange, for a
   * peer whose {@link #extensions()} offer {@code batch-fds}: one result per block, in order. When
   * the peer fails the extension every block not opened is {@code NOT_OPENED} and the caller opens
   * them one by one.
   *
   * @throws java.io.InterruptedIOException if the thread was interrupted
   */
  public PrefetchResult[] prefetchBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      String fileName)
      throws IOException {
    return prefetcher.prefetchBatch(blocks, tokens, socketPath, fileName);
  }

  /** Which DataNodes speak the scr shim's extensions (negotiated once per socket path). */
  public PeerExtensions extensions() {
    return extensions;
  }

  /** The mapped-read policy and its counters, or null when mapped reads are off. */
  public MappedReads mappedReads() {
    return mappedReads;
  }

  /** The replica cache's counters. */
  public LeaseCacheStats cacheStats() {
    return cache.stats();
  }

  /**
   * The health of the DataNode sockets this engine asked for replicas (the health itself is
   * process-wide), for metrics.
   */
  public List<io.scr.core.stats.HealthStatus> healthStatus() {
    return opener.healthOfPathsAsked();
  }

  /** The DataNode health this manager consults and feeds (process-wide in production). */
  public DataNodeHealth health() {
    return health;
  }

  /**
   * Which local DataNodes are known not to hold which block (refused as absent within the expiry):
   * a lease asks none of them again for that block; callers choosing among several DataNodes
   * consult it themselves.
   */
  public AbsentReplicas absentReplicas() {
    return absent;
  }

  /** Every path's backoff counters. */
  public List<BackoffStatus> backoffStatus() {
    return backoff.snapshot();
  }

  /**
   * Open replicas read now although their DataNode went away (orphaned: see {@code
   * OrphanedReplicas}), until a DataNode on their socket vouches for them again.
   */
  public int orphanedReplicas() {
    return endpoints.orphanedReplicas();
  }

  /** The slot pools' counters, one per DataNode path that has one. */
  public List<io.scr.shm.SlotPoolStats> slotPoolStats() {
    return endpoints.slotPoolStats();
  }

  /**
   * The endpoint of {@code path}, created on first use.
   *
   * @throws IOException when the manager is closing or closed
   */
  DataNodeEndpoint endpoint(String path) throws IOException {
    return endpoints.endpoint(path);
  }

  /** Drops every cached replica of {@code key} (e.g. after a checksum error). */
  public void invalidate(ReplicaKey key) {
    cache.invalidate(key);
  }

  @Override
  public void close() {
    recoveryListener.close();
    source.close(); // no lease after this; every thread's spare lease and buffers are dropped
    // The pools first: the slots of the replicas closed below are then freed here, not told to
    // the DataNode one by one (see the class comment).
    endpoints.closeAll();
    cache.close();
    endpoints.closeWatcher();
    pool.close();
  }

  /** Configuration of a {@link ReplicaManager}. Not thread-safe. */
  public static final class Builder {
    private final String name;
    private final DomainSocketPool pool;
    private final PathBackoff backoff;
    private DataNodeHealth health;
    private Ticker ticker = Ticker.systemTicker();
    private int capacity;
    private long fdBudget;
    private long idleExpiryMs = 300000;
    private long staleThresholdMs = 300000;
    private boolean shmEnabled = true;
    private boolean outliveDataNode = true;
    private boolean extensionsEnabled = true;
    private int slotLowWatermark = 64;
    private long slotWaitMs = 50;
    private int scratchBytes = 65536;
    private MappedReads mappedReads;
    private String clientName = "scr";
    private Consumer<FallbackReason> fallbacks = r -> {};
    private ClientCounters counters = new ClientCounters();
    private AbsentReplicas absent;
    private ReplicaSource.MissHook missHook = ReplicaSource.MissHook.NONE;

    private Builder(String name, DomainSocketPool pool, PathBackoff backoff) {
      if (name == null || pool == null || backoff == null) {
        throw new NullPointerException("name, pool and backoff are required");
      }
      this.name = name;
      this.pool = pool;
      this.backoff = backoff;
    }

    /** Time source for staleness and cache expiry. */
    public Builder ticker(Ticker t) {
      this.ticker = t;
      return this;
    }

    /** Cache capacity in replicas; 0 = from the fd limit. */
    public Builder capacity(int c) {
      this.capacity = c;
      return this;
    }

    /** Most fds the cache may hold; 0 = from the fd limit. */
    public Builder fdBudget(long fds) {
      this.fdBudget = fds;
      return this;
    }

    /** Idle expiry of cached replicas, ms. */
    public Builder idleExpiryMs(long ms) {
      this.idleExpiryMs = ms;
      return this;
    }

    /** Age after which a replica without a slot is stale, ms. */
    public Builder staleThresholdMs(long ms) {
      this.staleThresholdMs = ms;
      return this;
    }

    /** Whether to request shared-memory slots. */
    public Builder shmEnabled(boolean on) {
      this.shmEnabled = on;
      return this;
    }

    /**
     * Whether open replicas keep reading while their DataNode process is away and are re-validated
     * when a DataNode is back ({@code scr.replica.outlive.datanode}).
     */
    public Builder outliveDataNode(boolean on) {
      this.outliveDataNode = on;
      return this;
    }

    /** Whether to use the scr shim's protocol extensions with DataNodes that offer them. */
    public Builder extensionsEnabled(boolean on) {
      this.extensionsEnabled = on;
      return this;
    }

    /** Free slots kept ready per DataNode. */
    public Builder slotLowWatermark(int slots) {
      this.slotLowWatermark = slots;
      return this;
    }

    /** Longest wait for a free slot, ms. */
    public Builder slotWaitMs(long ms) {
      this.slotWaitMs = ms;
      return this;
    }

    /** Per-thread scratch for unaligned checksummed reads. */
    public Builder scratchBytes(int bytes) {
      this.scratchBytes = bytes;
      return this;
    }

    /** Mapped reads of hot replicas (no pread); null (the default) for none. */
    public Builder mappedReads(MappedReads m) {
      this.mappedReads = m;
      return this;
    }

    /** Client name sent with shared-memory requests (names the segment on the DataNode). */
    public Builder clientName(String n) {
      this.clientName = n;
      return this;
    }

    /** Receives every fallback reason (for counters). */
    public Builder fallbacks(Consumer<FallbackReason> f) {
      this.fallbacks = f;
      return this;
    }

    /** Counters for short-circuit reads, bytes, opens and checksum failures (for metrics). */
    public Builder counters(ClientCounters c) {
      this.counters = java.util.Objects.requireNonNull(c, "counters");
      return this;
    }

    /**
     * The DataNode health to consult and feed (default: the process-wide one, {@link
     * DataNodeHealth#shared}, with the keys' defaults).
     */
    public Builder health(DataNodeHealth h) {
      this.health = java.util.Objects.requireNonNull(h, "health");
      return this;
    }

    /**
     * The memory of replicas local DataNodes refused as absent (default: {@link
     * AbsentReplicas#DEFAULT_CAPACITY} entries, {@link AbsentReplicas#DEFAULT_EXPIRY_SECONDS} s, on
     * this builder's ticker).
     */
    public Builder absentReplicas(AbsentReplicas a) {
      this.absent = java.util.Objects.requireNonNull(a, "absent replicas");
      return this;
    }

    /**
     * Run by every reader's miss after it consulted the backoff and the absent-replica memory and
     * before it loads (to hold a reader inside the window a racing prefetch can fill; default:
     * nothing).
     */
    public Builder afterMissChecked(ReplicaSource.MissHook hook) {
      this.missHook = java.util.Objects.requireNonNull(hook, "hook");
      return this;
    }

    /** The manager. */
    public ReplicaManager build() {
      return new ReplicaManager(this);
    }
  }
}
