package io.scr.core.internal.replica;

import io.scr.cache.LeaseCache;
import io.scr.cache.ReusableLease;
import io.scr.cache.Ticker;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.internal.read.TailBlockReader;
import io.scr.core.internal.read.TailNotReadyException;
import io.scr.core.internal.read.TailSnapshot;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * Short-circuit reads of the block being written, up to the reader's visible length: the lease's
 * replica (opened for a growing file) read by {@link TailBlockReader}, with the DataNode's
 * in-memory replica state when its peer offers it.
 *
 * <p><b>Mode B</b> (a shim advertising {@code replica-state}): the partial last chunk is verified
 * against the DataNode's consistent (bytes on disk, last checksum) pair, asked over the pooled
 * connection (op 127 REPLICA_STATE, one round trip, no fds) when a read needs bytes past the
 * replica's latest snapshot and cached on the replica otherwise: a snapshot stays true for the
 * bytes it covers. A tail that is visible but not on disk, or moved, is asked again, twice at most;
 * then the read goes stock. A snapshot with another generation stamp (pipeline recovery, append)
 * drops the cached replica: new fds need the block's new generation stamp.
 *
 * <p><b>Mode A</b> (a stock DataNode): its memory cannot be asked without a TCP round trip, so the
 * partial last chunk is verified against the meta file's last checksum, which the DataNode rewrites
 * in place after each write to the chunk ({@link TailBlockReader}). A read that meets the DataNode
 * between its two writes, or a tail not yet on disk, tries again, twice at most; then the read goes
 * stock, whose DataNode sends the checksum it holds in memory.
 *
 * <p>Never a corruption report: a mismatch in a block being written is the writer's race until the
 * stock read, which verifies the same bytes, says otherwise.
 *
 * <p>Thread-safety: thread-safe; counters are adders, snapshots immutable.
 */
public final class TailReads {
  private final TailBlockReader reader = new TailBlockReader();
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final LeaseCache<ReplicaKey, Replica> cache;
  private final DataNodeHealth health;
  private final Ticker ticker;
  private final LongAdder stateRequests = new LongAdder();
  private final LongAdder notReady = new LongAdder();

  /**
   * Attempts per read at most: in mode B the snapshots asked (a first one and two after a tail that
   * moved), in mode A the reads of the files (a first one and two after the DataNode was met
   * between its writes).
   */
  static final int MAX_ATTEMPTS_PER_READ = 3;

  TailReads(
      DomainSocketPool pool,
      PeerExtensions extensions,
      LeaseCache<ReplicaKey, Replica> cache,
      DataNodeHealth health,
      Ticker ticker) {
    this.pool = pool;
    this.extensions = extensions;
    this.cache = cache;
    this.health = health;
    this.ticker = ticker;
  }

  /**
   * One REPLICA_STATE exchange with the DataNode at {@code path}, bounded by its health deadline as
   * a replica open is: one that waits it makes the DataNode suspect, so a hung DataNode costs a
   * reader one deadline, not the socket timeout, and is read around after that.
   */
  private TailSnapshot exchangeState(
      String path, ExtendedBlock block, Token<BlockTokenIdentifier> token) throws IOException {
    stateRequests.increment();
    long start = ticker.read();
    try {
      return ShortCircuitExchanges.replicaState(
          pool, path, health.deadlineMillis(path), block, token);
    } catch (IOException e) {
      if (DataNodeHealth.isTimeout(e)) {
        health.requestFailed(path, e, ticker.read() - start);
      }
      throw e;
    }
  }

  /**
   * Reads up to {@code dst.remaining()} bytes at {@code blockOffset} of the block being written
   * that {@code lease} (from {@link ReplicaSource#lease(ReadContext, ExtendedBlock, Token, String,
   * String, boolean)} with {@code beingWritten}) holds, never past {@code visibleLength}.
   *
   * @param block the block as the reader knows it (generation stamp, for the state request)
   * @return bytes read (at least one), or -1 at or past the visible length
   * @throws TailNotReadyException when nothing can be served short-circuit now (read it stock)
   */
  public int read(
      ReplicaLease lease,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      long blockOffset,
      ByteBuffer dst,
      long visibleLength,
      boolean verify,
      ReadContext context)
      throws IOException {
    LeasedReplica leased = (LeasedReplica) lease;
    Replica replica = leased.value();
    boolean snapshots = verify && extensions.features(replica.socketPath()).replicaState();
    TailSnapshot tail = snapshots ? replica.tail : null;
    long wanted = Math.min(blockOffset + dst.remaining(), visibleLength);
    int attempts = 0;
    while (true) {
      if (snapshots && (tail == null || (tail.beingWritten() && tail.dataLength() < wanted))) {
        tail = askState(replica, block, token);
      }
      attempts++;
      try {
        int n =
            reader.read(replica.files(), blockOffset, dst, visibleLength, tail, verify, context);
        if (n > 0) {
          replica.counters().recordRead(n);
        }
        return n;
      } catch (TailNotReadyException e) {
        if (attempts >= MAX_ATTEMPTS_PER_READ
            || e.reason() == TailNotReadyException.Reason.REPLICA_CHANGED) {
          notReady.increment();
          throw e;
        }
        if (snapshots) {
          tail = null; // ask again: the DataNode is a write ahead
        }
      }
    }
  }

  /**
   * What the DataNode at {@code socketPath} knows of its replica of {@code block} now, visible
   * length included: one REPLICA_STATE exchange over the pooled connection (no fds, no replica
   * opened), for a stream that measures the visible length of its block being written on open or at
   * its end. The answer is also kept on the block's cached replica, if any, for the reads that
   * follow ({@link #keepOnCachedReplica}). Null when that DataNode does not offer the request (a
   * stock DataNode), refused it (no such replica, a bad token) or did not answer: the caller
   * measures the stock way then.
   *
   * @throws java.io.InterruptedIOException on the calling thread's own interrupt
   */
  public TailSnapshot replicaState(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath)
      throws IOException {
    if (!extensions.features(socketPath).replicaState()) {
      return null;
    }
    try {
      TailSnapshot state = exchangeState(socketPath, block, token);
      keepOnCachedReplica(block, socketPath, state);
      return state;
    } catch (java.io.EOFException e) {
      extensions.extensionFailed(socketPath, "replica state request: " + e);
      return null;
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      return null;
    }
  }

  /**
   * Keeps {@code state} on the cached replica of {@code block} at {@code socketPath}, if one of the
   * same generation stamp opened for a growing file is cached, unless it holds a snapshot that
   * covers more: a stream that measured its visible length this way on open then reads the block
   * being written with no second request.
   */
  private void keepOnCachedReplica(ExtendedBlock block, String socketPath, TailSnapshot state) {
    ReusableLease<Replica> cached = new ReusableLease<>();
    if (!cache.leaseIfPresent(
        new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath), cached)) {
      return;
    }
    try {
      Replica replica = cached.value();
      TailSnapshot had = replica.tail;
      if (replica.generationStamp() == state.generationStamp()
          && replica.files().isGrowing()
          && (had == null || had.dataLength() <= state.dataLength())) {
        replica.tail = state;
      }
    } finally {
      cached.close();
    }
  }

  private TailSnapshot askState(
      Replica replica, ExtendedBlock block, Token<BlockTokenIdentifier> token) throws IOException {
    TailSnapshot tail;
    try {
      tail = exchangeState(replica.socketPath(), block, token);
    } catch (java.io.EOFException e) {
      extensions.extensionFailed(replica.socketPath(), "replica state request: " + e);
      throw new TailNotReadyException(
          TailNotReadyException.Reason.NOT_ON_DISK,
          "the DataNode at " + replica.socketPath() + " did not answer a replica state request");
    }
    if (tail.generationStamp() != replica.generationStamp()) {
      // Recovered or appended under the reader: these fds are of the old generation.
      cache.invalidate(
          new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), replica.socketPath()));
      throw new TailNotReadyException(
          TailNotReadyException.Reason.REPLICA_CHANGED,
          "the replica of "
              + block
              + " at "
              + replica.socketPath()
              + " now has generation stamp "
              + tail.generationStamp());
    }
    replica.tail = tail;
    return tail;
  }

  /**
   * Sets (null clears) what reads run between reading the data and reading its checksums: a seam
   * for tests that move the tail in that window.
   */
  public void afterTailDataRead(Runnable hook) {
    reader.afterTailDataRead(hook);
  }

  /** Replica state requests sent (mode B). */
  public long stateRequests() {
    return stateRequests.sum();
  }

  /** Reads of a block being written that went stock for a reason of the writer's. */
  public long notReadyCount() {
    return notReady.sum();
  }
}
