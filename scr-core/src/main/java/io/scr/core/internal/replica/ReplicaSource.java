package io.scr.core.internal.replica;

import io.scr.cache.FdBudgetExhaustedException;
import io.scr.cache.LeaseCache;
import io.scr.cache.LeaseCacheClosedException;
import io.scr.cache.LeaseLoadException;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.read.LocalBlockReader;
import io.scr.core.internal.read.MappingBudget;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.stats.ClientCounters;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;

/**
 * The one place a replica is leased: a lease is a cache hit (lock-free, no I/O, and no allocation
 * with the thread's spare lease) or, on a miss, the cache's single load per replica through the
 * {@link ReplicaOpener}. Every reader of an engine leases here: both drop-ins through {@link
 * LocalRead} with the thread's {@link ReadContext}, zero-copy reads, the replica accessor's choice
 * of a DataNode and the engine's own API with leases of their own.
 *
 * <p>A miss first consults the path's backoff, the DataNode's health ({@code
 * io.scr.core.internal.health.DataNodeHealth}: not healthy, no request) and the memory of replicas
 * the DataNode said it does not hold ({@link AbsentReplicas}); each sends the read to the stock
 * path (reason counted) without a request. A cached replica of another generation stamp is dropped
 * and opened again.
 *
 * <p><b>Per-thread contexts.</b> Each thread's {@link ReadContext} (spare lease and buffers) sits
 * in one thread-local whose holders are also kept in a weak registry: a context refers to the whole
 * engine and holds about 80 KiB of direct memory, and a thread-local entry whose key is gone stays
 * in its thread's map until that thread touches its thread-locals again. {@link #close()} empties
 * every holder, so a thread's map keeps only an empty shell and the engine and the buffers go with
 * the garbage collector; it frees no buffer itself (another thread may be reading into it).
 *
 * <p>Concurrency: thread-safe. Hits take no lock; concurrent misses of one replica share one load
 * (the cache coalesces them). {@link #readContext()} is lock-free after a thread's first call (a
 * thread-local read and a volatile read of the holder). The close race is settled by ordering:
 * {@code readContext()} writes the holder before it reads {@link #closed}, {@code close()} writes
 * {@code closed} before it empties the holders, so one sees the other and no holder stays filled
 * after close; a read that began before close keeps the context it holds. {@link #close()} does not
 * close the cache or the endpoints: {@link ReplicaManager} does, in its order. A lease that raced
 * the close ends as {@code CLOSED} at the closed cache or gate.
 */
public final class ReplicaSource {
  /**
   * Run by a reader's miss after it consulted the backoff and the absent-replica memory, before it
   * loads: a seam to hold a reader inside the window a racing prefetch can fill.
   */
  public interface MissHook {
    MissHook NONE = block -> {};

    void afterMissChecked(ExtendedBlock block);
  }

  private final String name;
  private final LeaseCache<ReplicaKey, Replica> cache;
  private final LocalBlockReader reader;
  private final int scratchBytes;

  /** Each thread's holder of its read context (see the class comment). */
  private final ThreadLocal<ContextHolder> contexts = new ThreadLocal<>();

  /**
   * Every thread's holder, so that {@link #close()} can empty them; weak, so a holder goes with its
   * thread. Guarded by its own monitor; touched once per thread and by close.
   */
  private final Set<ContextHolder> holders =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private final ReplicaOpener opener;
  private final PathBackoff backoff;
  private final AbsentReplicas absent;
  private final ClientCounters counters;
  private final Consumer<FallbackReason> fallbacks;
  private final MissHook missHook;
  private final TailReads tailReads;

  /** Set by {@link #close()}: every later lease is a {@code CLOSED} fallback. */
  private volatile boolean closed;

  ReplicaSource(
      String name,
      LeaseCache<ReplicaKey, Replica> cache,
      LocalBlockReader reader,
      int scratchBytes,
      ReplicaOpener opener,
      PathBackoff backoff,
      AbsentReplicas absent,
      ClientCounters counters,
      Consumer<FallbackReason> fallbacks,
      MissHook missHook,
      TailReads tailReads) {
    this.tailReads = tailReads;
    this.name = name;
    this.cache = cache;
    this.reader = reader;
    if (scratchBytes < 512) {
      throw new IllegalArgumentException("scratch must be at least 512 bytes: " + scratchBytes);
    }
    this.scratchBytes = scratchBytes;
    this.opener = opener;
    this.backoff = backoff;
    this.absent = absent;
    this.counters = counters;
    this.fallbacks = fallbacks;
    this.missHook = missHook;
  }

  /**
   * The calling thread's read context: pass it to {@link #lease} and {@link #release}. After {@link
   * #close()} each call gets a context of its own, which is not kept.
   */
  public ReadContext readContext() {
    ContextHolder h = contexts.get();
    if (h == null) {
      h = new ContextHolder();
      holders.add(h);
      contexts.set(h);
    }
    ReadContext c = h.context;
    if (c == null) {
      c = new ReadContext(scratchBytes);
      h.context = c;
      // Written before reading the flag, as close() writes the flag before emptying holders.
      if (closed) {
        h.context = null;
      }
    }
    return c;
  }

  /**
   * Leases the replica of {@code block} from the DataNode at {@code socketPath} for a read on the
   * calling thread, reopening the thread's spare lease: a cache hit takes no lock, does no I/O,
   * reads no clock and allocates nothing. Give it back with {@link #release} on the same thread. A
   * second lease open on one thread at once is simply a new object. Readers go through {@link
   * LocalRead}, which leases here.
   *
   * <p>{@code beingWritten} leases the replica of a block being written: one opened for it ({@link
   * io.scr.core.internal.read.ReplicaFiles#openGrowing}), read with {@link TailReads#read}. A
   * cached replica of the same generation stamp opened while its block was complete cannot be (an
   * append bumps the generation stamp); one that was is replaced.
   *
   * @param context the calling thread's {@link #readContext()}
   * @return the lease, or null when the replica cannot be read locally now (reason counted)
   * @throws InvalidToken when the DataNode rejected the block token
   */
  public ReplicaLease lease(
      ReadContext context,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      boolean beingWritten)
      throws IOException {
    if (closed) {
      fallbacks.accept(FallbackReason.CLOSED);
      return null;
    }
    ReplicaLease spare = context.spareLease();
    LeasedReplica lease;
    if (spare instanceof LeasedReplica && ((LeasedReplica) spare).ownedBy(this)) {
      lease = (LeasedReplica) spare;
      context.spareLease(null); // taken: a nested lease on this thread must not reopen it
    } else {
      lease = new LeasedReplica(this, reader);
    }
    lease.readOn(context);
    // On null or an exception the spare is dropped rather than kept: it is closed then, but a
    // failure path is not worth proving that for.
    return lease(lease, block, token, socketPath, fileName, fallbacks, beingWritten);
  }

  /**
   * Closes {@code lease} (from {@link #lease(ReadContext, ExtendedBlock, Token, String, String,
   * boolean)} with {@code context}) and keeps it as the thread's spare if the thread has none. The
   * caller must not touch it afterwards.
   */
  public void release(ReadContext context, ReplicaLease lease) {
    lease.close();
    if (context.spareLease() == null
        && lease instanceof LeasedReplica
        && context.isCurrentThread()) {
      context.spareLease(lease);
    }
  }

  /**
   * Leases the replica of {@code block} from the DataNode at {@code socketPath} with a lease object
   * of its own (one that may outlive the read, or be used by another thread: the engine's API,
   * zero-copy reads, the replica accessor's choice of a DataNode), opening it on a miss, and
   * reports the reason of a null result to {@code onFallback}.
   *
   * @param reuse null, or a closed lease this source returned earlier that the caller no longer
   *     shares with anyone: it is reopened instead of allocating a new one
   * @param onFallback where the reason of a null result goes (for a caller that tries several
   *     DataNodes and counts only the final outcome); null: the engine's fallback counters
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
      ReplicaLease reuse,
      Consumer<FallbackReason> onFallback)
      throws IOException {
    Consumer<FallbackReason> reasons = onFallback != null ? onFallback : fallbacks;
    if (closed) {
      reasons.accept(FallbackReason.CLOSED);
      return null;
    }
    LeasedReplica lease = reuse == null ? new LeasedReplica(this, reader) : reusable(reuse);
    return lease(lease, block, token, socketPath, fileName, reasons, false);
  }

  private ReplicaLease lease(
      LeasedReplica lease,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      Consumer<FallbackReason> onFallback,
      boolean beingWritten)
      throws IOException {
    ReplicaKey key = lease.probe(block.getBlockPoolId(), block.getBlockId(), socketPath);
    // The hit path: lock-free, no I/O, no allocation with a reused lease; no backoff check either
    // (a cached replica whose slot is still VALID is good whatever its socket is doing now).
    if (cache.leaseIfPresent(key, lease)) {
      if (fits(lease.value(), block, beingWritten)) {
        lease.opened(fileName);
        countPrefetchHit(lease.value());
        return lease;
      }
      lease.close();
    }
    return leaseOnMiss(block, token, socketPath, fileName, lease, onFallback, beingWritten);
  }

  /**
   * Whether a cached replica serves a read of {@code block}: same generation stamp, and opened for
   * a growing file when the block is being written (a replica opened while its block was being
   * written serves later reads of the finalized block too: its length is the file's size now).
   */
  private static boolean fits(Replica r, ExtendedBlock block, boolean beingWritten) {
    return r.generationStamp() == block.getGenerationStamp()
        && (!beingWritten || r.files().isGrowing());
  }

  private ReplicaLease leaseOnMiss(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      LeasedReplica lease,
      Consumer<FallbackReason> fallbacks,
      boolean beingWritten)
      throws IOException {
    if (backoff.isBackingOff(socketPath)) {
      fallbacks.accept(FallbackReason.BACKING_OFF);
      return null;
    }
    if (!opener.admitsNewOpens(socketPath)) {
      // Suspect, unresponsive or dead: the read goes to another replica at once; replicas open
      // already (the hit path above) keep reading.
      fallbacks.accept(FallbackReason.DATANODE_UNHEALTHY);
      return null;
    }
    if (absent.isAbsent(block, socketPath)) {
      // This DataNode said it has no such replica a moment ago: asking again costs a refused
      // round trip per read (a remote block read through scr would cost 4x stock).
      fallbacks.accept(FallbackReason.BLOCK_REFUSED);
      return null;
    }
    missHook.afterMissChecked(block);
    ReplicaKey key = new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath);
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        cache.lease(key, k -> opener.open(block, token, socketPath, false, beingWritten), lease);
      } catch (FdBudgetExhaustedException e) {
        fallbacks.accept(FallbackReason.FD_BUDGET);
        return null;
      } catch (LeaseLoadException e) {
        if (opener.isClosing()) {
          fallbacks.accept(FallbackReason.CLOSED); // the engine closed under this load
          return null;
        }
        fallbacks.accept(OpenFailures.reasonOrRethrow(e.getCause() != null ? e.getCause() : e));
        return null;
      } catch (LeaseCacheClosedException e) {
        fallbacks.accept(FallbackReason.CLOSED);
        return null;
      }
      if (fits(lease.value(), block, beingWritten)) {
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

  /**
   * A lease on the replica of {@code block} if one is cached, valid and of the block's generation
   * stamp, from whichever of {@code socketPaths} served it (the lease's {@link
   * ReplicaLease#socketPath()} says which); null otherwise. Never does I/O and counts no fallback
   * (a probe, not a read).
   */
  public ReplicaLease leaseIfCached(
      ExtendedBlock block, String fileName, Collection<String> socketPaths) {
    LeasedReplica lease = new LeasedReplica(this, reader);
    for (String path : socketPaths) {
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

  /** How leases of blocks being written are read (up to the reader's visible length). */
  public TailReads tailReads() {
    return tailReads;
  }

  /**
   * Sets (null clears) what reads of blocks being written run between reading the data and reading
   * its checksums: a seam for tests that move the tail in that window.
   */
  public void afterTailDataRead(Runnable hook) {
    tailReads.afterTailDataRead(hook);
  }

  /** A new, closed lease of this source (for callers that lease through the cache themselves). */
  LeasedReplica newLease() {
    return new LeasedReplica(this, reader);
  }

  /** Counts one read call of an orphaned replica (its DataNode away) that returned {@code n}. */
  void countOrphanedRead(int n) {
    counters.recordOrphanedRead(n);
  }

  /** A reader's first lease of a replica a prefetch opened: one open the reader did not make. */
  private void countPrefetchHit(Replica replica) {
    if (replica.takeUnreadPrefetch()) {
      counters.recordPrefetchHit();
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

  /**
   * Empties every thread's read context (spare lease and buffers), so nothing per thread outlives
   * the engine; idempotent. Leases still open keep working until they close.
   */
  void close() {
    closed = true;
    synchronized (holders) {
      for (ContextHolder h : holders) {
        h.context = null; // each thread's map keeps an empty holder, nothing of the engine
      }
      holders.clear();
    }
  }

  /**
   * What a thread's thread-local holds: an empty shell once the engine is closed. Static, so it
   * keeps nothing of the engine alive.
   */
  private static final class ContextHolder {
    /** Written by its thread, and emptied by {@link ReplicaSource#close()} from another. */
    volatile ReadContext context;
  }

  /**
   * {@code lease}'s zero-copy view of {@code length} bytes at {@code blockOffset} ({@link
   * LeasedReplica#mapped}); null when the block file cannot be mapped.
   *
   * @param lease a lease this layer made ({@link #lease}), open
   * @throws java.io.EOFException if the block file was truncated under the replica
   */
  public static ByteBuffer mapped(
      ReplicaLease lease, long blockOffset, int length, MappingBudget budget) throws IOException {
    return ((LeasedReplica) lease).mapped(blockOffset, length, budget);
  }
}
