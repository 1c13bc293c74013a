package io.scr.core.hdfs;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.replica.ReplicaSource;
import io.scr.core.internal.replica.TailReads;
import java.io.IOException;
import java.util.Collections;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * One stream's block being written: its short-circuit reads up to the visible length the stream
 * holds for it ({@link TailReads}), and at the stream's end the visible length now, asked of the
 * local DataNode only when the replica's block file has grown (so a reader polling the end of a
 * file nobody wrote to asks nothing and gets -1 at once, as from stock).
 *
 * <p>A DataNode with the scr shim answers from its memory over the pooled UNIX socket
 * (REPLICA_STATE); a stock DataNode by its {@code getReplicaVisibleLength} RPC, the one stock's
 * reopen would make, over a kept connection ({@link VisibleLengthRpc}). The stream extends its file
 * length with the answer ({@code ScrDfsInputStreamBase.extendLastBlock}); the new bytes are then
 * read short-circuit like the rest of the block.
 *
 * <p>Thread-safety: thread-safe; counters are adders, everything else is final.
 */
final class GrowingTail {
  private final Engine scr;
  private final ReplicaSource source;
  private final VisibleLengthRpc visibleLengths;
  private final String src;

  /** Reads of the block being written whose rest went stock for a reason of the writer's. */
  private final LongAdder fallbacks = new LongAdder();

  /** Stateful reads at the end that found the block being written grown. */
  private final LongAdder grown = new LongAdder();

  GrowingTail(Engine scr, VisibleLengthRpc visibleLengths, String src) {
    this.scr = scr;
    this.source = scr.replicaSource();
    this.visibleLengths = visibleLengths;
    this.src = src;
  }

  /**
   * A copy of {@code lbs}' block being written when {@code pos} is at its end, or null (no block
   * being written, a corrupt one, or {@code pos} elsewhere). A copy: stock sets the length of its
   * own instance when it measures again. The caller holds the stream's {@code infoLock}.
   */
  static LocatedBlock beingWrittenEndingAt(LocatedBlocks lbs, long pos) {
    LocatedBlock current = lbs.isLastBlockComplete() ? null : lbs.getLastLocatedBlock();
    if (current == null
        || current.isCorrupt()
        || pos != current.getStartOffset() + current.getBlockSize()) {
      return null;
    }
    LocatedBlock last =
        new LocatedBlock(new ExtendedBlock(current.getBlock()), current.getLocations());
    last.setBlockToken(current.getBlockToken());
    return last;
  }

  /**
   * The visible length of {@code last} (a copy of the stream's block being written, at its end) on
   * the local DataNode now, or -1 when no healthy local DataNode holds it, its block file has not
   * grown past {@code last}'s length, or the DataNode did not answer for this generation stamp.
   */
  long grownLength(LocatedBlock last) throws IOException {
    String path = LocalVisibleLength.localPath(scr, last);
    if (path == null || !maybeGrown(last, path)) {
      return -1;
    }
    return scr.extensions().features(path).replicaState()
        ? LocalVisibleLength.fromMemory(scr, last, path)
        : LocalVisibleLength.fromRpc(scr, visibleLengths, last, path);
  }

  /**
   * Whether the replica at {@code path} may hold bytes past {@code last}'s length: its block file
   * (an {@code fstat} of the cached replica's fd) is longer; true when no replica is cached. (Bytes
   * acknowledged before they reach the disk are found by the next read.)
   */
  private boolean maybeGrown(LocatedBlock last, String path) {
    ReplicaLease cached =
        source.leaseIfCached(last.getBlock(), src, Collections.singletonList(path));
    if (cached == null) {
      return true;
    }
    try {
      return cached.length() > last.getBlockSize();
    } finally {
      cached.close();
    }
  }

  void countFallback() {
    fallbacks.increment();
  }

  void countGrown() {
    grown.increment();
  }

  /**
   * Reads of the block being written that left bytes to the stock read for a reason of the writer's
   * (not on disk yet, tail moving, replica recovered).
   */
  long fallbacks() {
    return fallbacks.sum();
  }

  /**
   * Stateful reads at the end of the stream that learned a longer visible length of the block being
   * written from the local DataNode and read on.
   */
  long grownLengths() {
    return grown.sum();
  }
}
