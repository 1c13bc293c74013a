package io.scr.core.internal.replica;

import io.scr.cache.Ticker;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.health.DataNodeUnhealthyException;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.internal.read.ReplicaFiles;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.PathCounters;
import io.scr.shm.Slot;
import io.scr.shm.SlotPool;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;

/**
 * The miss path: opens one replica for the cache's loader, on the missing thread. A preallocated
 * slot from the path's {@link SlotPool} (if shared memory is on), op 87 on a pooled connection, the
 * two fds and the receipt byte, the meta header; a failure is classified by {@link OpenFailures}
 * and a refusal for an absent replica remembered ({@link AbsentReplicas}). A slot allocated for a
 * request that failed goes back to its pool as the DataNode left it: registered (the grant came),
 * refused (the DataNode unregisters it after its answer) or never registered.
 *
 * <p>Concurrency: thread-safe. The cache runs at most one load per replica key at a time; a load of
 * a replica a batched prefetch holds ({@link #pendingOpens}) takes it over or waits for its answer
 * ({@link PendingOpen}).
 */
final class ReplicaOpener {
  private final DomainSocketPool pool;
  private final Endpoints endpoints;
  private final OpenFailures failures;
  private final PathBackoff backoff;
  private final AbsentReplicas absent;
  private final ClientCounters counters;
  private final Ticker ticker;
  private final long staleAfterNanos;
  private final long slotWaitMs;
  private final DataNodeHealth health;

  /**
   * Replicas a batched prefetch is about to open or opening: a reader's load of one takes it over
   * or waits for it ({@link PendingOpen}).
   */
  final ConcurrentHashMap<ReplicaKey, PendingOpen> pendingOpens = new ConcurrentHashMap<>();

  ReplicaOpener(
      DomainSocketPool pool,
      Endpoints endpoints,
      OpenFailures failures,
      PathBackoff backoff,
      AbsentReplicas absent,
      ClientCounters counters,
      Ticker ticker,
      long staleAfterNanos,
      long slotWaitMs,
      DataNodeHealth health) {
    this.pool = pool;
    this.endpoints = endpoints;
    this.failures = failures;
    this.backoff = backoff;
    this.absent = absent;
    this.counters = counters;
    this.ticker = ticker;
    this.staleAfterNanos = staleAfterNanos;
    this.slotWaitMs = slotWaitMs;
    this.health = health;
  }

  /** The process-wide DataNode health this opener reports to and consults. */
  DataNodeHealth health() {
    return health;
  }

  /**
   * The socket paths this engine asked for replicas (whose health its metrics publish: the
   * process-wide health knows every engine's paths).
   */
  private final java.util.Set<String> pathsAsked = ConcurrentHashMap.newKeySet();

  /** Whether {@code path} admits new opens now; remembers that this engine uses it. */
  boolean admitsNewOpens(String path) {
    if (!pathsAsked.contains(path)) {
      pathsAsked.add(path);
    }
    return health.admitsNewOpens(path);
  }

  /** The health of the paths this engine asked for replicas, by path. */
  java.util.List<io.scr.core.stats.HealthStatus> healthOfPathsAsked() {
    java.util.List<io.scr.core.stats.HealthStatus> out = new java.util.ArrayList<>();
    for (io.scr.core.stats.HealthStatus st : health.snapshot()) {
      if (pathsAsked.contains(st.path())) {
        out.add(st);
      }
    }
    return out;
  }

  /** Whether the engine is closing: a load that fails now failed because of it. */
  boolean isClosing() {
    return endpoints.isClosing();
  }

  /**
   * Longest a reader's load waits for a batched prefetch it found sent: one batch's bound (the
   * longest health deadline, see {@link #batchDeadlineMs}) and a slot wait.
   */
  private long batchWaitMs() {
    return batchDeadlineMs() + slotWaitMs;
  }

  /**
   * What bounds a batched fd exchange: the longest health deadline ({@code
   * scr.client.health.deadline.max.ms}), since a batch holds many requests and the adaptive
   * deadline is one request's.
   */
  int batchDeadlineMs() {
    return health.maxDeadlineMillis();
  }

  /**
   * The loader: runs on the missing thread, outside every cache lock, at most once at a time per
   * replica key (the cache's single flight).
   *
   * @param prefetched whether a prefetch on open loads it (its first reader counts a prefetch hit)
   */
  Replica open(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, boolean prefetched)
      throws IOException {
    return open(block, token, socketPath, prefetched, false);
  }

  /**
   * As {@link #open(ExtendedBlock, Token, String, boolean)}; {@code growing} opens the replica of a
   * block being written ({@link ReplicaFiles#openGrowing}), which a batched prefetch never holds.
   */
  Replica open(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      boolean prefetched,
      boolean growing)
      throws IOException {
    if (!growing && !pendingOpens.isEmpty()) {
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
    if (!admitsNewOpens(socketPath)) {
      // Not even a connect: a hung DataNode would hold this reader for the whole deadline.
      throw new DataNodeUnhealthyException(socketPath, health.state(socketPath));
    }
    DataNodeHealth.TrialRequest request =
        deadlineMs -> trialRequest(block, token, socketPath, deadlineMs);
    health.lastRequest(socketPath, request); // the trial after the next probe's answer
    if (health.onTrial(socketPath)) {
      // Back on a probe's word only: its first fd requests may take the whole deadline (a
      // DataNode just restarted). This request is sent on the probe thread as the trial, if none
      // is, and this read goes the stock way now.
      health.offerTrial(socketPath, request);
      throw new DataNodeUnhealthyException(socketPath, HealthState.HEALTHY);
    }
    long start = ticker.read();
    try {
      return openTimed(block, token, socketPath, prefetched, growing);
    } finally {
      counters.recordReplicaOpen(ticker.read() - start);
    }
  }

  private Replica openTimed(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      boolean prefetched,
      boolean growing)
      throws IOException {
    long t0 = ticker.read();
    DataNodeEndpoint endpoint = endpoints.endpoint(socketPath);
    Slot slot = endpoint.allocateSlot();
    SlotPool slotPool = endpoint.slotPoolOrNull();
    if (!health.admitsRequests(socketPath)) {
      // The first segment request of this endpoint waited the whole deadline (it hangs), or the
      // DataNode left healthy meanwhile: no fd request now.
      if (slot != null) {
        slotPool.releaseUnregistered(slot);
      }
      HealthState state = health.state(socketPath);
      throw new DataNodeUnhealthyException(socketPath, state, state != HealthState.HEALTHY);
    }
    return requestAndOpen(block, token, socketPath, prefetched, growing, t0, endpoint, slot);
  }

  /**
   * The trial request of a DataNode back on a probe's word ({@link DataNodeHealth#offerTrial}): op
   * 87 for {@code block} without a slot, bounded by {@code deadlineMs}; the fds it passes are
   * closed at once (the block's next read opens its replica the usual way once the trial has ended
   * it). Runs on the probe thread.
   */
  private void trialRequest(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, int deadlineMs)
      throws IOException {
    if (isClosing()) {
      // Not sent: says nothing about the DataNode (the health ignores it; the next open offers).
      throw new java.io.InterruptedIOException("the engine closed before the trial was sent");
    }
    FileDescriptor[] fds = new FileDescriptor[2];
    try {
      ShortCircuitExchanges.requestFds(pool, socketPath, block, token, null, fds, deadlineMs);
    } finally {
      closeQuietly(fds);
    }
  }

  private Replica requestAndOpen(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      boolean prefetched,
      boolean growing,
      long t0,
      DataNodeEndpoint endpoint,
      Slot slot)
      throws IOException {
    SlotPool slotPool = endpoint.slotPoolOrNull();
    FileDescriptor[] fds = new FileDescriptor[2];
    boolean registered = false;
    long t1 = ticker.read();
    try {
      ShortCircuitExchanges.requestFds(
          pool,
          socketPath,
          block,
          token,
          slot == null ? null : slot.id(),
          fds,
          health.deadlineMillis(socketPath));
      registered = true;
      long t2 = ticker.read();
      health.answered(socketPath, t2 - t1);
      FileChannel data = new FileInputStream(fds[0]).getChannel();
      FileChannel meta = new FileInputStream(fds[1]).getChannel();
      String name = block.getBlockPoolId() + ":" + block.getBlockName();
      ReplicaFiles files =
          growing
              ? ReplicaFiles.openGrowing(data, meta, name)
              : ReplicaFiles.open(data, meta, name);
      counters.recordOpenPhase(ClientCounters.OpenPhase.SLOT, t1 - t0);
      counters.recordOpenPhase(ClientCounters.OpenPhase.EXCHANGE, t2 - t1);
      counters.recordOpenPhase(ClientCounters.OpenPhase.FILES, ticker.read() - t2);
      backoff.recordSuccess(socketPath);
      return newReplica(endpoint, files, block, token, fds, slot, slotPool, prefetched);
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
      if (!registered && e instanceof IOException && !isClosing()) {
        health.requestFailed(socketPath, (IOException) e, ticker.read() - t1);
      }
      failures.classify(socketPath, e);
      throw e;
    }
  }

  /**
   * A replica of {@code block} opened from {@code endpoint} just now with the received {@code fds}
   * (data, meta; {@code files} owns them), counted as one open of that path. One with a slot is
   * held by the endpoint until it closes, so it can outlive the DataNode ({@link
   * OrphanedReplicas}).
   */
  Replica newReplica(
      DataNodeEndpoint endpoint,
      ReplicaFiles files,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      FileDescriptor[] fds,
      Slot slot,
      SlotPool slotPool,
      boolean prefetched) {
    String socketPath = endpoint.path();
    PathCounters pathCounters = counters.path(socketPath);
    pathCounters.recordOpen();
    if (slot == null) {
      return new Replica(
          socketPath,
          files,
          block.getGenerationStamp(),
          null,
          slotPool,
          ticker,
          staleAfterNanos,
          pathCounters,
          prefetched);
    }
    Replica r =
        new Replica(
            socketPath,
            files,
            block.getGenerationStamp(),
            slot,
            slotPool,
            ticker,
            staleAfterNanos,
            pathCounters,
            prefetched,
            block,
            token,
            fds[0],
            endpoint);
    endpoint.hold(r);
    return r;
  }

  static void closeQuietly(FileDescriptor[] fds) {
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
}
