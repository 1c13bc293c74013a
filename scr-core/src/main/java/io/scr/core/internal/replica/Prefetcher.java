package io.scr.core.internal.replica;

import io.scr.cache.FdBudgetExhaustedException;
import io.scr.cache.LeaseCache;
import io.scr.cache.LeaseCacheClosedException;
import io.scr.cache.LeaseLoadException;
import io.scr.cache.Ticker;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.internal.read.ReplicaFiles;
import io.scr.core.stats.ClientCounters;
import io.scr.shm.Slot;
import io.scr.shm.SlotId;
import io.scr.shm.SlotPool;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prefetch on open: opens replicas ahead of their first read on a prefetch thread, one by one
 * through the cache's single load per replica (shared with readers), or several of one DataNode in
 * one op-127 BATCH_FDS exchange whose blocks a reader's load takes over or waits for ({@link
 * PendingOpen}). Counts no fallback (a prefetch is not a read).
 *
 * <p>Concurrency: thread-safe; the state is the cache's and the opener's pending opens (a
 * concurrent map: one batch per replica at a time).
 */
final class Prefetcher {
  private static final Logger LOG = LoggerFactory.getLogger(Prefetcher.class);

  private final LeaseCache<ReplicaKey, Replica> cache;
  private final ReplicaSource source;
  private final ReplicaOpener opener;
  private final OpenFailures failures;
  private final Endpoints endpoints;
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final PathBackoff backoff;
  private final AbsentReplicas absent;
  private final ClientCounters counters;
  private final Ticker ticker;

  Prefetcher(
      LeaseCache<ReplicaKey, Replica> cache,
      ReplicaSource source,
      ReplicaOpener opener,
      OpenFailures failures,
      Endpoints endpoints,
      DomainSocketPool pool,
      PeerExtensions extensions,
      PathBackoff backoff,
      AbsentReplicas absent,
      ClientCounters counters,
      Ticker ticker) {
    this.cache = cache;
    this.source = source;
    this.opener = opener;
    this.failures = failures;
    this.endpoints = endpoints;
    this.pool = pool;
    this.extensions = extensions;
    this.backoff = backoff;
    this.absent = absent;
    this.counters = counters;
    this.ticker = ticker;
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
  PrefetchResult prefetch(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    LeasedReplica lease = source.newLease();
    ReplicaKey key = new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath);
    if (cache.leaseIfPresent(key, lease)) {
      lease.close();
      return PrefetchResult.ALREADY_OPEN;
    }
    if (backoff.isBackingOff(socketPath) || absent.remembers(block, socketPath)) {
      return PrefetchResult.NOT_OPENED;
    }
    try {
      cache.lease(key, k -> opener.open(block, token, socketPath, true), lease);
    } catch (FdBudgetExhaustedException | LeaseCacheClosedException e) {
      return PrefetchResult.NOT_OPENED;
    } catch (LeaseLoadException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      if (cause instanceof InvalidToken) {
        throw (InvalidToken) cause;
      }
      if (cause instanceof InterruptedIOException && !DataNodeHealth.isTimeout(cause)) {
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
   * As {@link #prefetch} for several blocks of one DataNode in one op-127 BATCH_FDS exchange (at
   * most {@link ShortCircuitExchanges#MAX_BLOCKS_PER_BATCH_FDS}), for a peer that advertised {@code
   * batch-fds}; the caller checks ({@link ReplicaManager#extensions()}). Until the batch is sent a
   * reader's load of one of its blocks takes that block over (the batch leaves it out); once sent,
   * the reader waits for the batch's answer instead of asking again. A refusal is handled per block
   * as for {@link #prefetch} (remembered when the replica is absent). When the peer fails the
   * extension (closes the connection, as a stock DataNode does on op 127) it is recorded with
   * {@link PeerExtensions#extensionFailed} and every block not opened is {@code NOT_OPENED}: the
   * caller opens them one by one.
   *
   * @return one result per block, in order
   * @throws java.io.InterruptedIOException if the thread was interrupted
   */
  PrefetchResult[] prefetchBatch(
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      String socketPath,
      String fileName)
      throws IOException {
    int n = blocks.size();
    PrefetchResult[] results = new PrefetchResult[n];
    ReplicaKey[] keys = new ReplicaKey[n];
    PendingOpen[] pending = new PendingOpen[n];
    LeasedReplica probe = source.newLease();
    for (int i = 0; i < n; i++) {
      ExtendedBlock b = blocks.get(i);
      keys[i] = new ReplicaKey(b.getBlockPoolId(), b.getBlockId(), socketPath);
      if (cache.leaseIfPresent(keys[i], probe)) {
        probe.close();
        results[i] = PrefetchResult.ALREADY_OPEN;
      } else if (backoff.isBackingOff(socketPath)
          || absent.remembers(b, socketPath)
          || !opener.health().admitsNewOpens(socketPath)
          || opener.health().onTrial(socketPath)) {
        results[i] = PrefetchResult.NOT_OPENED;
      } else {
        PendingOpen p = new PendingOpen();
        if (opener.pendingOpens.putIfAbsent(keys[i], p) == null) {
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
          opener.pendingOpens.remove(keys[i], pending[i]);
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
    DataNodeEndpoint endpoint = endpoints.endpoint(socketPath);
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
              pool, socketPath, batchBlocks, batchTokens, slotIds, opener.batchDeadlineMs());
    } catch (IOException | RuntimeException e) {
      for (Slot slot : slots) {
        if (slot != null) {
          slotPool.releaseUnregistered(slot);
        }
      }
      if (e instanceof IOException
          && opener.health().requestFailed(socketPath, (IOException) e, ticker.read() - t0)) {
        return; // the blocks are opened one by one, or read the stock way while it hangs
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
        failures.classify(socketPath, e); // as a failed op 87 would
      }
      return;
    }
    long exchangeNanos = ticker.read() - t0;
    opener.health().answered(socketPath, exchangeNanos / sent.size());
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
        failures.classify(socketPath, refusal);
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
        counters.recordOpenPhase(ClientCounters.OpenPhase.EXCHANGE, exchangeNanos / sent.size());
        counters.recordOpenPhase(ClientCounters.OpenPhase.FILES, ticker.read() - t1);
        pending[i].complete(
            opener.newReplica(
                endpoint,
                files,
                block,
                tokens.get(i),
                new FileDescriptor[] {a.data(), a.meta()},
                slots[j],
                slotPool,
                true));
      } catch (IOException | RuntimeException e) {
        ReplicaOpener.closeQuietly(new FileDescriptor[] {a.data(), a.meta()});
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
    LeasedReplica lease = source.newLease();
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
}
