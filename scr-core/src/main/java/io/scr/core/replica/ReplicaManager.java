package io.scr.core.replica;

import io.scr.cache.FdBudgetExhaustedException;
import io.scr.cache.LeaseCache;
import io.scr.cache.LeaseCacheClosedException;
import io.scr.cache.LeaseCacheConfig;
import io.scr.cache.LeaseCacheStats;
import io.scr.cache.LeaseLoadException;
import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.ScrKeys;
import io.scr.core.metrics.ClientCounters;
import io.scr.core.metrics.PathCounters;
import io.scr.core.net.DomainConnectException;
import io.scr.core.net.DomainSocketPool;
import io.scr.core.net.FailureClass;
import io.scr.core.net.PathBackoff;
import io.scr.core.net.PeerExtensions;
import io.scr.core.net.SegmentWatcher;
import io.scr.core.net.ShortCircuitExchanges;
import io.scr.core.net.ShortCircuitRefusedException;
import io.scr.core.read.LocalBlockReader;
import io.scr.core.read.MappedReads;
import io.scr.core.read.ReplicaFiles;
import io.scr.shm.Slot;
import io.scr.shm.SlotId;
import io.scr.shm.SlotPool;
import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens, caches and leases local replicas. A lease is a cache hit (lock-free, no I/O) or, on a
 * miss, one fd request: a preallocated slot from the path's {@link SlotPool} (if shared memory is
 * on), op 87 on a pooled connection, the two fds and the receipt byte, the meta header, and the
 * replica goes into the cache.
 *
 * <p>Failures are classified once, by the loading thread: a connect failure, ERROR_UNSUPPORTED
 * without version, or an I/O/protocol failure backs the path off ({@link PathBackoff}); an error
 * for one block falls back for that block only, and when the DataNode said it holds no such replica
 * it is not asked again for that block and generation stamp for a while ({@link AbsentReplicas});
 * an invalid token is rethrown (no backoff, so the caller can refetch the token and try again).
 *
 * <p>Concurrency: thread-safe. Hits take no lock; concurrent misses of one replica (block and
 * DataNode socket) share one load (the cache coalesces them). Endpoints are created once per path
 * (concurrent map). {@link #close()} closes the slot pools, then the cache (idle replicas now,
 * leased ones when released), the segment watcher and the socket pool; it is idempotent.
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
  private static final Logger LOG = LoggerFactory.getLogger(ReplicaManager.class);
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  private final String name;
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final PathBackoff backoff;
  private final LeaseCache<ReplicaKey, Replica> cache;
  private final LocalBlockReader reader;
  private final MappedReads mappedReads;
  private final Ticker ticker;
  private final long staleAfterNanos;
  private final boolean shmEnabled;
  private final int slotLowWatermark;
  private final Duration slotWait;
  private final String clientName;
  private final Consumer<FallbackReason> fallbacks;
  private final ClientCounters counters;
  private final AbsentReplicas absent;
  private final ConcurrentHashMap<String, DataNodeEndpoint> endpoints = new ConcurrentHashMap<>();

  /**
   * Replicas a batched prefetch ({@link #prefetchBatch}) is about to open or opening: a reader's
   * load of one takes it over or waits for it ({@link PendingOpen}).
   */
  private final ConcurrentHashMap<ReplicaKey, PendingOpen> pendingOpens = new ConcurrentHashMap<>();

  private final Object watcherLock = new Object();

  @com.google.errorprone.annotations.concurrent.GuardedBy("watcherLock")
  private SegmentWatcher watcher;

  @com.google.errorprone.annotations.concurrent.GuardedBy("watcherLock")
  private boolean closed;

  /**
   * The closed gate: set first thing in {@link #close()}. After it no endpoint (hence no slot-pool
   * thread, segment or socket) is created and a load in flight ends as {@link
   * FallbackReason#CLOSED}, not as an I/O failure that would back a path off.
   */
  private volatile boolean closing;

  /**
   * Tests only: run by a reader's miss after it consulted the backoff and the absent-replica memory
   * and before it loads (to hold a reader inside the window a racing prefetch can fill). Null in
   * production.
   */
  static volatile Consumer<ExtendedBlock> afterMissCheckedForTests;

  private ReplicaManager(Builder b) {
    this.name = b.name;
    this.pool = b.pool;
    this.extensions = new PeerExtensions(b.pool, b.extensionsEnabled);
    this.backoff = b.backoff;
    this.ticker = b.ticker;
    this.reader = new LocalBlockReader(b.scratchBytes, b.mappedReads);
    this.mappedReads = b.mappedReads;
    this.staleAfterNanos = TimeUnit.MILLISECONDS.toNanos(b.staleThresholdMs);
    this.shmEnabled = b.shmEnabled;
    this.slotLowWatermark = b.slotLowWatermark;
    this.slotWait = Duration.ofMillis(b.slotWaitMs);
    this.clientName = b.clientName;
    this.fallbacks = b.fallbacks;
    this.counters = b.counters;
    this.absent =
        b.absent != null ? b.absent : AbsentReplicas.newBuilder().ticker(b.ticker).build();
    LeaseCacheConfig.Builder cc =
        LeaseCacheConfig.newBuilder()
            .name("scr-cache-" + name)
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
  }

  /** A builder; the socket pool and the backoff are required. */
  public static Builder newBuilder(String name, DomainSocketPool pool, PathBackoff backoff) {
    return new Builder(name, pool, backoff);
  }

  /**
   * Leases the replica of {@code block} from the DataNode at {@code socketPath}, opening it on a
   * miss. Returns null (and reports the reason) when it cannot be read locally now.
   *
   * @param reuse null, or a closed lease this manager returned earlier that the caller no longer
   *     shares with anyone: it is reopened instead of allocating a new one, so a cache hit
   *     allocates nothing
   * @return the lease ({@code reuse} itself when given), or null
   * @throws InvalidToken when the DataNode rejected the block token
   * @throws IllegalArgumentException if {@code reuse} was made by another engine
   * @throws IllegalStateException if {@code reuse} is still open
   */
  public ReplicaLease lease(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      ReplicaLease reuse)
      throws IOException {
    return lease(block, token, socketPath, fileName, reuse, fallbacks);
  }

  /**
   * As {@link #lease(ExtendedBlock, Token, String, String, ReplicaLease)}, reporting the reason of
   * a null result to {@code onFallback} instead of the manager's counters (for a caller that tries
   * several DataNodes and counts only the final outcome).
   */
  public ReplicaLease lease(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      ReplicaLease reuse,
      Consumer<FallbackReason> onFallback)
      throws IOException {
    LeasedReplica lease;
    ReplicaKey key;
    if (reuse == null) {
      lease = new LeasedReplica(this, reader);
      key = new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath);
    } else {
      lease = reusable(reuse);
      key = lease.probe(block.getBlockPoolId(), block.getBlockId(), socketPath);
    }
    // The hit path: lock-free, no I/O, no allocation with a reused lease; no backoff check either
    // (a cached replica whose slot is still VALID is good whatever its socket is doing now).
    if (cache.leaseIfPresent(key, lease)) {
      if (lease.value().generationStamp() == block.getGenerationStamp()) {
        lease.opened(fileName);
        countPrefetchHit(lease.value());
        return lease;
      }
      lease.close();
    }
    return leaseOnMiss(block, token, socketPath, fileName, lease, key, onFallback);
  }

  /** A reader's first lease of a replica a prefetch opened: one open the reader did not make. */
  private void countPrefetchHit(Replica replica) {
    if (replica.takeUnreadPrefetch()) {
      counters.recordPrefetchHit();
    }
  }

  /** What {@link #prefetch} did with a block. */
  public enum PrefetchResult {
    /** This call opened the replica (or shared the load a reader had started) and cached it. */
    OPENED,
    /** The replica was cached already: nothing to do. */
    ALREADY_OPEN,
    /**
     * Not opened: the socket is backing off, the DataNode is known not to hold the block, the fd
     * budget or the cache is full, or the request failed (the first read decides, as without
     * prefetch).
     */
    NOT_OPENED
  }

  /**
   * Opens the replica of {@code block} ahead of its first read and leaves it in the cache (prefetch
   * on open), on the calling (prefetch) thread. It shares the cache's single load per replica with
   * readers: a reader that leases the block while this open runs waits for it instead of asking the
   * DataNode again, and a prefetch that comes after a reader's open finds the replica cached. The
   * absent-replica memory and the backoff are consulted as for a read, and once more inside the
   * load, so a prefetch and a read of a block the DataNode refuses cost one request between them.
   * No fallback is counted (a prefetch is not a read); the first read counts its own.
   *
   * @throws InvalidToken when the DataNode rejected the block token
   * @throws java.io.InterruptedIOException if the thread was interrupted
   */
  public PrefetchResult prefetch(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    LeasedReplica lease = new LeasedReplica(this, reader);
    ReplicaKey key = new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath);
    if (cache.leaseIfPresent(key, lease)) {
      lease.close();
      return PrefetchResult.ALREADY_OPEN;
    }
    if (backoff.isBackingOff(socketPath) || absent.remembers(block, socketPath)) {
      return PrefetchResult.NOT_OPENED;
    }
    try {
      cache.lease(key, k -> open(block, token, socketPath, true), lease);
    } catch (FdBudgetExhaustedException | LeaseCacheClosedException e) {
      return PrefetchResult.NOT_OPENED;
    } catch (LeaseLoadException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      if (cause instanceof InvalidToken) {
        throw (InvalidToken) cause;
      }
      if (cause instanceof InterruptedIOException) {
        throw (InterruptedIOException) cause;
      }
      LOG.debug("prefetch of {} from {} failed: {}", block, socketPath, cause.toString());
      return PrefetchResult.NOT_OPENED;
    }
    boolean current = lease.value().generationStamp() == block.getGenerationStamp();
    if (current) {
      lease.value().files().prefaultChecksums(); // the first read's page faults, taken here
    }
    lease.close();
    return current ? PrefetchResult.OPENED : PrefetchResult.NOT_OPENED;
  }

  /**
   * A lease on the replica of {@code block} if one is cached, valid and of the block's generation
   * stamp, from whichever DataNode this manager has talked to (the lease's {@link
   * ReplicaLease#socketPath()} says which); null otherwise. Never does I/O and counts no fallback
   * (a probe, not a read).
   */
  public ReplicaLease leaseIfCached(ExtendedBlock block, String fileName) {
    LeasedReplica lease = new LeasedReplica(this, reader);
    for (String path : endpoints.keySet()) {
      ReplicaKey key = lease.probe(block.getBlockPoolId(), block.getBlockId(), path);
      if (cache.leaseIfPresent(key, lease)) {
        if (lease.value().generationStamp() == block.getGenerationStamp()) {
          lease.opened(fileName);
          return lease;
        }
        lease.close();
      }
    }
    return null;
  }

  /** Longest a reader's load waits for a batched prefetch it found sent: one exchange's bound. */
  private long batchWaitMs() {
    return pool.exchangeTimeoutMs() + slotWait.toMillis();
  }

  /**
   * As {@link #prefetch} for several blocks of one DataNode in one op-127 BATCH_FDS exchange (at
   * most {@link ShortCircuitExchanges#MAX_BLOCKS_PER_BATCH_FDS}), for a peer that advertised {@code
   * batch-fds}; the caller checks ({@link #extensions()}). Until the batch is sent a reader's load
   * of one of its blocks takes that block over (the batch leaves it out); once sent, the reader
   * waits for the batch's answer instead of asking again. A refusal is handled per block as for
   * {@link #prefetch} (remembered when the replica is absent). When the peer fails the extension
   * (closes the connection, as a stock DataNode does on op 127) it is recorded with {@link
   * PeerExtensions#extensionFailed} and every block not opened is {@code NOT_OPENED}: the caller
   * opens them one by one.
   *
   * @return one result per block, in order
   * @throws java.io.InterruptedIOException if the thread was interrupted
   */
  public PrefetchResult[] prefetchBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      String fileName)
      throws IOException {
    int n = blocks.size();
    PrefetchResult[] results = new PrefetchResult[n];
    ReplicaKey[] keys = new ReplicaKey[n];
    PendingOpen[] pending = new PendingOpen[n];
    LeasedReplica probe = new LeasedReplica(this, reader);
    for (int i = 0; i < n; i++) {
      ExtendedBlock b = blocks.get(i);
      keys[i] = new ReplicaKey(b.getBlockPoolId(), b.getBlockId(), socketPath);
      if (cache.leaseIfPresent(keys[i], probe)) {
        probe.close();
        results[i] = PrefetchResult.ALREADY_OPEN;
      } else if (backoff.isBackingOff(socketPath) || absent.remembers(b, socketPath)) {
        results[i] = PrefetchResult.NOT_OPENED;
      } else {
        PendingOpen p = new PendingOpen();
        if (pendingOpens.putIfAbsent(keys[i], p) == null) {
          pending[i] = p;
        } else {
          results[i] = PrefetchResult.NOT_OPENED; // another prefetch of this replica is under way
        }
      }
    }
    try {
      List<Integer> sent = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        if (pending[i] != null) {
          if (pending[i].send()) {
            sent.add(i);
          } else {
            results[i] = PrefetchResult.ALREADY_OPEN; // a reader took it over and opens it
          }
        }
      }
      if (!sent.isEmpty()) {
        exchangeBatch(blocks, tokens, socketPath, sent, pending, results);
        install(keys, pending, blocks, sent, results);
      }
    } finally {
      for (int i = 0; i < n; i++) {
        if (pending[i] != null) {
          pending[i].complete(null); // wakes any reader still waiting: it opens the block itself
          pendingOpens.remove(keys[i], pending[i]);
          Replica left = pending[i].claim();
          if (left != null) {
            closeQuietly(left);
          }
          if (results[i] == null) {
            results[i] = PrefetchResult.NOT_OPENED;
          }
        }
      }
    }
    return results;
  }

  /** Sends the batch of the {@code sent} blocks and completes their pending opens. */
  private void exchangeBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      List<Integer> sent,
      PendingOpen[] pending,
      PrefetchResult[] results)
      throws IOException {
    DataNodeEndpoint endpoint = endpoint(socketPath);
    List<ExtendedBlock> batchBlocks = new ArrayList<>(sent.size());
    List<Token<BlockTokenIdentifier>> batchTokens = new ArrayList<>(sent.size());
    List<SlotId> slotIds = new ArrayList<>(sent.size());
    Slot[] slots = new Slot[sent.size()];
    for (int j = 0; j < sent.size(); j++) {
      batchBlocks.add(blocks.get(sent.get(j)));
      batchTokens.add(tokens.get(sent.get(j)));
      slots[j] = endpoint.allocateSlot();
      slotIds.add(slots[j] == null ? null : slots[j].id());
    }
    // After the allocations: the first one on a new endpoint creates its pool. Read before, it was
    // null, and the replicas of a first batch never gave their slots back (the segment and its
    // connection stayed until the engine was garbage-collected).
    SlotPool slotPool = endpoint.slotPoolOrNull();
    List<ShortCircuitExchanges.BatchedFds> answers;
    long t0 = ticker.read();
    try {
      answers =
          ShortCircuitExchanges.requestFdsBatched(
              pool, socketPath, batchBlocks, batchTokens, slotIds);
    } catch (IOException | RuntimeException e) {
      for (Slot slot : slots) {
        if (slot != null) {
          slotPool.releaseUnregistered(slot);
        }
      }
      if (e instanceof InterruptedIOException) {
        throw (InterruptedIOException) e;
      }
      if (e instanceof java.io.EOFException || e instanceof java.net.SocketException) {
        // Closed on an extension request (the pool already retried a stale connection once): the
        // peer no longer takes it. Stock ops until its socket changes; the blocks are opened one
        // by one.
        extensions.extensionFailed(socketPath, e.toString());
      } else {
        classify(socketPath, e); // as a failed op 87 would
      }
      return;
    }
    long exchangeNanos = ticker.read() - t0;
    for (int j = 0; j < sent.size(); j++) {
      int i = sent.get(j);
      ShortCircuitExchanges.BatchedFds a = answers.get(j);
      ExtendedBlock block = blocks.get(i);
      if (a.refusal() != null) {
        if (slots[j] != null) {
          endpoint.releaseRefused(slots[j]);
        }
        IOException refusal = a.refusal();
        if (refusal instanceof ShortCircuitRefusedException
            && ((ShortCircuitRefusedException) refusal).replicaAbsent()) {
          absent.remember(block, socketPath);
        }
        classify(socketPath, refusal);
        results[i] = PrefetchResult.NOT_OPENED;
        pending[i].complete(null);
        continue;
      }
      long t1 = ticker.read();
      try {
        ReplicaFiles files =
            ReplicaFiles.open(
                new FileInputStream(a.data()).getChannel(),
                new FileInputStream(a.meta()).getChannel(),
                block.getBlockPoolId() + ":" + block.getBlockName());
        PathCounters pathCounters = counters.path(socketPath);
        pathCounters.recordOpen();
        counters.recordOpenPhase(ClientCounters.OpenPhase.EXCHANGE, exchangeNanos / sent.size());
        counters.recordOpenPhase(ClientCounters.OpenPhase.FILES, ticker.read() - t1);
        pending[i].complete(
            new Replica(
                socketPath,
                files,
                block.getGenerationStamp(),
                slots[j],
                slotPool,
                ticker,
                staleAfterNanos,
                pathCounters,
                true));
      } catch (IOException | RuntimeException e) {
        closeQuietly(new FileDescriptor[] {a.data(), a.meta()});
        if (slots[j] != null) {
          slotPool.release(slots[j]); // registered by the grant
        }
        LOG.debug("prefetched replica of {} could not be opened: {}", block, e.toString());
        results[i] = PrefetchResult.NOT_OPENED;
        pending[i].complete(null);
      }
    }
    backoff.recordSuccess(socketPath);
  }

  /**
   * Puts the batch's replicas into the cache: through the cache's single load per key, so a reader
   * that claimed one (and is loading it) is joined rather than duplicated.
   */
  private void install(
      ReplicaKey[] keys,
      PendingOpen[] pending,
      List<ExtendedBlock> blocks,
      List<Integer> sent,
      PrefetchResult[] results) {
    LeasedReplica lease = new LeasedReplica(this, reader);
    for (int i : sent) {
      if (results[i] != null) {
        continue; // refused or failed
      }
      PendingOpen p = pending[i];
      try {
        cache.lease(
            keys[i],
            k -> {
              Replica r = p.claim();
              if (r == null) {
                // A reader claimed it and its load finished and was dropped in between: no second
                // request from the prefetch.
                throw new IOException("prefetched replica of " + k + " was taken");
              }
              return r;
            },
            lease);
        boolean current = lease.value().generationStamp() == blocks.get(i).getGenerationStamp();
        if (current) {
          lease.value().files().prefaultChecksums();
        }
        lease.close();
        results[i] = current ? PrefetchResult.OPENED : PrefetchResult.NOT_OPENED;
      } catch (IOException | RuntimeException e) {
        results[i] = PrefetchResult.NOT_OPENED; // budget, closed, or taken: the read decides
      }
    }
  }

  private static void closeQuietly(Replica r) {
    try {
      r.close();
    } catch (IOException e) {
      LOG.debug("closing an unused prefetched replica failed", e);
    }
  }

  private LeasedReplica reusable(ReplicaLease reuse) {
    if (!(reuse instanceof LeasedReplica) || !((LeasedReplica) reuse).ownedBy(this)) {
      throw new IllegalArgumentException(
          "cannot reuse " + reuse + ": it was not leased from this engine (" + name + ")");
    }
    LeasedReplica lease = (LeasedReplica) reuse;
    if (lease.isOpen()) {
      throw new IllegalStateException("cannot reuse " + reuse + ": close it first");
    }
    return lease;
  }

  private ReplicaLease leaseOnMiss(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      LeasedReplica lease,
      ReplicaKey lookup,
      Consumer<FallbackReason> fallbacks)
      throws IOException {
    if (backoff.isBackingOff(socketPath)) {
      fallbacks.accept(FallbackReason.BACKING_OFF);
      return null;
    }
    if (absent.isAbsent(block, socketPath)) {
      // This DataNode said it has no such replica a moment ago: asking again costs a refused
      // round trip per read (a remote block read through scr would cost 4x stock).
      fallbacks.accept(FallbackReason.BLOCK_REFUSED);
      return null;
    }
    Consumer<ExtendedBlock> hook = afterMissCheckedForTests;
    if (hook != null) {
      hook.accept(block);
    }
    ReplicaKey key =
        lookup.isProbe()
            ? new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath)
            : lookup;
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        cache.lease(key, k -> open(block, token, socketPath, false), lease);
      } catch (FdBudgetExhaustedException e) {
        fallbacks.accept(FallbackReason.FD_BUDGET);
        return null;
      } catch (LeaseLoadException e) {
        if (closing) {
          fallbacks.accept(FallbackReason.CLOSED); // the engine closed under this load
          return null;
        }
        return failed(e.getCause() != null ? e.getCause() : e, fallbacks);
      } catch (LeaseCacheClosedException e) {
        fallbacks.accept(FallbackReason.CLOSED);
        return null;
      }
      if (lease.value().generationStamp() == block.getGenerationStamp()) {
        lease.opened(fileName);
        countPrefetchHit(lease.value()); // a reader that waited for a prefetch's load
        return lease;
      }
      // Appended or recovered block: the cached replica is an older (or newer) version.
      lease.close();
      cache.invalidate(key);
    }
    fallbacks.accept(FallbackReason.BLOCK_REFUSED);
    return null;
  }

  private static ReplicaLease failed(Throwable cause, Consumer<FallbackReason> fallbacks)
      throws IOException {
    if (cause instanceof InvalidToken) {
      throw (InvalidToken) cause;
    }
    if (cause instanceof InterruptedIOException) {
      throw (InterruptedIOException) cause;
    }
    if (cause instanceof ClosedByInterruptException) {
      throw (ClosedByInterruptException) cause;
    }
    FallbackReason reason;
    if (cause instanceof DomainConnectException) {
      reason = FallbackReason.CONNECT_FAILED;
    } else if (cause instanceof ShortCircuitRefusedException) {
      reason =
          ((ShortCircuitRefusedException) cause).failureClass() == FailureClass.UNSUPPORTED
              ? FallbackReason.UNSUPPORTED
              : FallbackReason.BLOCK_REFUSED;
    } else {
      reason = FallbackReason.IO_ERROR;
    }
    LOG.debug("short-circuit open failed ({}): {}", reason, cause.toString());
    fallbacks.accept(reason);
    return null;
  }

  /**
   * The loader: runs on the missing thread, outside every cache lock, at most once at a time per
   * replica key (the cache's single flight).
   *
   * @param prefetched whether a prefetch on open loads it (its first reader counts a prefetch hit)
   */
  private Replica open(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, boolean prefetched)
      throws IOException {
    if (!pendingOpens.isEmpty()) {
      PendingOpen pending =
          pendingOpens.get(new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath));
      if (pending != null) {
        // A batched prefetch holds this block: if it has not sent it yet, this load takes it over
        // (no wait behind other blocks); if it has, the batch's answer is this load's.
        Replica r = pending.takeOverOrAwait(TimeUnit.MILLISECONDS.toNanos(batchWaitMs()));
        if (r != null) {
          return r;
        }
      }
    }
    // Asked again inside the single flight: a caller that checked before a load of this key
    // failed as absent (a prefetch racing a read) must not ask that DataNode a second time.
    if (absent.isAbsent(block, socketPath)) {
      throw ShortCircuitRefusedException.rememberedAbsent(
          "DataNode at "
              + socketPath
              + " refused "
              + block
              + " a moment ago: it holds no such replica (not asked again)");
    }
    long start = ticker.read();
    try {
      return openTimed(block, token, socketPath, prefetched);
    } finally {
      counters.recordReplicaOpen(ticker.read() - start);
    }
  }

  private Replica openTimed(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, boolean prefetched)
      throws IOException {
    long t0 = ticker.read();
    DataNodeEndpoint endpoint = endpoint(socketPath);
    Slot slot = endpoint.allocateSlot();
    SlotPool slotPool = endpoint.slotPoolOrNull();
    FileDescriptor[] fds = new FileDescriptor[2];
    boolean registered = false;
    try {
      long t1 = ticker.read();
      ShortCircuitExchanges.requestFds(
          pool, socketPath, block, token, slot == null ? null : slot.id(), fds);
      registered = true;
      long t2 = ticker.read();
      FileChannel data = new FileInputStream(fds[0]).getChannel();
      FileChannel meta = new FileInputStream(fds[1]).getChannel();
      ReplicaFiles files =
          ReplicaFiles.open(data, meta, block.getBlockPoolId() + ":" + block.getBlockName());
      counters.recordOpenPhase(ClientCounters.OpenPhase.SLOT, t1 - t0);
      counters.recordOpenPhase(ClientCounters.OpenPhase.EXCHANGE, t2 - t1);
      counters.recordOpenPhase(ClientCounters.OpenPhase.FILES, ticker.read() - t2);
      backoff.recordSuccess(socketPath);
      PathCounters pathCounters = counters.path(socketPath);
      pathCounters.recordOpen();
      return new Replica(
          socketPath,
          files,
          block.getGenerationStamp(),
          slot,
          slotPool,
          ticker,
          staleAfterNanos,
          pathCounters,
          prefetched);
    } catch (IOException | RuntimeException e) {
      if (!registered) {
        closeQuietly(fds);
      }
      if (slot != null) {
        if (registered) {
          slotPool.release(slot);
        } else if (e instanceof ShortCircuitRefusedException || e instanceof InvalidToken) {
          endpoint.releaseRefused(slot); // the DataNode unregisters it after its answer
        } else {
          slotPool.releaseUnregistered(slot);
        }
      }
      if (e instanceof ShortCircuitRefusedException
          && ((ShortCircuitRefusedException) e).replicaAbsent()) {
        absent.remember(block, socketPath);
      }
      classify(socketPath, e);
      throw e;
    }
  }

  private void classify(String path, Exception e) {
    if (closing) {
      // The engine closed under this request (its socket pool is gone): not the path's fault.
      return;
    }
    if (e instanceof DomainConnectException) {
      long nanos = backoff.recordFailure(path, FailureClass.CONNECT, e.getMessage());
      // A socket the client cannot reach is a configuration problem (no DataNode there, or a
      // directory this user may not traverse): say so once per streak, not on every retry, and
      // never fall back silently. The message carries the hint for the errno.
      if (backoff.firstWarningOfStreak(path, FailureClass.CONNECT)) {
        LOG.warn(
            "{}. Short-circuit reads from {} fall back to TCP, retried after {} s (backing off;"
                + " logged again only after a connect there succeeds)",
            e.getMessage(),
            path,
            TimeUnit.NANOSECONDS.toSeconds(nanos));
      }
    } else if (e instanceof ShortCircuitRefusedException) {
      FailureClass c = ((ShortCircuitRefusedException) e).failureClass();
      if (c != null) {
        long nanos = backoff.recordFailure(path, c, e.getMessage());
        LOG.warn(
            "{}; short-circuit reads from {} back off for {} s",
            e.getMessage(),
            path,
            TimeUnit.NANOSECONDS.toSeconds(nanos));
      }
    } else if (!(e instanceof InvalidToken)
        && !(e instanceof InterruptedIOException)
        // An interrupted reader (HBase interrupts its handlers) says nothing about the path.
        && !(e instanceof ClosedByInterruptException)) {
      long nanos = backoff.recordFailure(path, FailureClass.IO, e.toString());
      LOG.warn(
          "short-circuit request to {} failed ({}); backing off for {} s",
          path,
          e.toString(),
          TimeUnit.NANOSECONDS.toSeconds(nanos));
    }
  }

  private static void closeQuietly(FileDescriptor[] fds) {
    for (FileDescriptor fd : fds) {
      if (fd != null && fd.valid()) {
        try {
          new FileInputStream(fd).close();
        } catch (IOException e) {
          // already invalid
        }
      }
    }
  }

  /**
   * The endpoint of {@code path}, created on first use unless the manager is closing.
   *
   * @throws IOException when the manager is closing or closed (a load that raced {@link #close()})
   */
  DataNodeEndpoint endpoint(String path) throws IOException {
    DataNodeEndpoint e = endpoints.get(path);
    if (e == null) {
      if (closing) {
        throw closedException(path);
      }
      e = newEndpoint(path);
    }
    if (closing) {
      // close() may have listed the endpoints before this one was added: close it here (it is
      // idempotent, and a closed endpoint never builds a pool), so nothing of it outlives us.
      e.close();
      throw closedException(path);
    }
    return e;
  }

  private IOException closedException(String path) {
    return new IOException(
        "replica manager " + name + " is closed; no short-circuit read from " + path);
  }

  private DataNodeEndpoint newEndpoint(String path) {
    return endpoints.computeIfAbsent(
        path,
        p ->
            new DataNodeEndpoint(
                p,
                pool,
                extensions,
                counters,
                backoff,
                this::watcher,
                clientName,
                shmEnabled,
                slotLowWatermark > 0,
                this::newSlotPool,
                ticker));
  }

  private SlotPool newSlotPool(DataNodeEndpoint endpoint) {
    String poolName = name + "@" + endpoint.path();
    ThreadFactory tf =
        r -> {
          Thread t = new Thread(r, "scr-slots-" + THREAD_IDS.incrementAndGet() + "-" + name);
          t.setDaemon(true);
          return t;
        };
    return SlotPool.newBuilder(poolName, endpoint, endpoint)
        .lowWatermark(slotLowWatermark)
        .maxAllocationWait(slotWait)
        .settingNames(
            ScrKeys.SLOT_POOL_MAX_ALLOCATION_WAIT_MS.name(), ScrKeys.SLOT_POOL_LOW_WATERMARK.name())
        .firstFetchOnBuild(true)
        .ticker(ticker::read)
        .threadFactory(tf)
        .build();
  }

  private SegmentWatcher watcher() throws IOException {
    synchronized (watcherLock) {
      if (closed || closing) {
        // The engine is closing: its pools stop fetching quietly (not a fetch failure).
        throw new io.scr.shm.SlotPoolClosedException("replica manager " + name + " is closed");
      }
      if (watcher == null) {
        watcher =
            new SegmentWatcher(
                r -> {
                  Thread t = new Thread(r, "scr-segment-watcher-" + name);
                  t.setDaemon(true);
                  return t;
                });
      }
      return watcher;
    }
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
   * Which local DataNodes are known not to hold which block (refused as absent within the expiry):
   * {@link #lease} asks none of them again for that block; callers choosing among several DataNodes
   * consult it themselves.
   */
  public AbsentReplicas absentReplicas() {
    return absent;
  }

  /** Every path's backoff counters. */
  public List<PathBackoff.Status> backoffStatus() {
    return backoff.snapshot();
  }

  /** The slot pools' counters, one per DataNode path that has one. */
  public List<io.scr.shm.SlotPoolStats> slotPoolStats() {
    List<io.scr.shm.SlotPoolStats> out = new ArrayList<>();
    for (DataNodeEndpoint e : endpoints.values()) {
      SlotPool p = e.slotPoolOrNull();
      if (p != null) {
        out.add(p.stats());
      }
    }
    return out;
  }

  /** Drops every cached replica of {@code key} (e.g. after a checksum error). */
  public void invalidate(ReplicaKey key) {
    cache.invalidate(key);
  }

  @Override
  public void close() {
    closing = true;
    // The pools first: the slots of the replicas closed below are then freed here, not told to
    // the DataNode one by one (see the class comment).
    for (DataNodeEndpoint e : endpoints.values()) {
      e.close();
    }
    cache.close();
    SegmentWatcher w;
    synchronized (watcherLock) {
      closed = true;
      w = watcher;
      watcher = null;
    }
    if (w != null) {
      w.close();
    }
    pool.close();
    reader.close(); // every thread's scratch buffers (direct memory) go with the engine
  }

  /** Configuration of a {@link ReplicaManager}. Not thread-safe. */
  public static final class Builder {
    private final String name;
    private final DomainSocketPool pool;
    private final PathBackoff backoff;
    private Ticker ticker = Ticker.systemTicker();
    private int capacity;
    private long fdBudget;
    private long idleExpiryMs = 300000;
    private long staleThresholdMs = 300000;
    private boolean shmEnabled = true;
    private boolean extensionsEnabled = true;
    private int slotLowWatermark = 64;
    private long slotWaitMs = 50;
    private int scratchBytes = 65536;
    private MappedReads mappedReads;
    private String clientName = "scr";
    private Consumer<FallbackReason> fallbacks = r -> {};
    private ClientCounters counters = new ClientCounters();
    private AbsentReplicas absent;

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
     * The memory of replicas local DataNodes refused as absent (default: {@link
     * AbsentReplicas#DEFAULT_CAPACITY} entries, {@link AbsentReplicas#DEFAULT_EXPIRY_SECONDS} s, on
     * this builder's ticker).
     */
    public Builder absentReplicas(AbsentReplicas a) {
      this.absent = java.util.Objects.requireNonNull(a, "absent replicas");
      return this;
    }

    /** The manager. */
    public ReplicaManager build() {
      return new ReplicaManager(this);
    }
  }
}
