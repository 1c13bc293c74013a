package io.scr.core.hdfs;

import io.scr.cache.Ticker;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failed or refused short-circuit read of one {@link ScrInputStream} means for its block.
 *
 * <p><b>Failures are transient unless they prove otherwise.</b> A failed or refused short-circuit
 * read sends the rest of that read to the stock path, and every decision it leads to has a bound:
 *
 * <ul>
 *   <li>The DataNode's socket backing off (after a connect or I/O failure): checked when the read
 *       leases, so the block short-circuits again on the first read after the backoff; nothing is
 *       remembered by the stream.
 *   <li>A null lease for another reason (block refused, fd budget) or an I/O error from the
 *       replica: the block is demoted for {@value ScrInputStream#DEMOTION_MILLIS} ms (by identity
 *       of its {@link LocatedBlock}), then tried again; a refresh of its locations lifts it at
 *       once.
 *   <li>The reading thread's own interrupt ({@code ClosedByInterruptException} or {@code
 *       InterruptedIOException} on an interrupted thread, stock's rule): the read throws it and
 *       nothing is demoted, backed off or dropped.
 *   <li>A replica channel closed under the read by someone else (another thread's interrupt on a
 *       JVM where channels stay interruptible, see {@code UninterruptibleChannels}): the read
 *       leases again once (the cache has replaced the replica) and goes on short-circuit.
 *   <li>A {@link ChecksumException}: reported to the NameNode against the DataNode the lease names
 *       ({@link ReplicaLease#socketPath()}), with stock's rule; that DataNode is kept off the stock
 *       fallback when the block has other replicas; the block stays stock until its locations are
 *       refreshed (corruption does not heal by waiting).
 * </ul>
 *
 * <p>Counted in {@link #fallbacks()}, {@link #checksumFallbacks()} and {@link #reopens()}; a read
 * of a block no local DataNode holds counts {@code NOT_LOCAL} (or why else it has no socket) in the
 * engine's fallback counters, once per read.
 *
 * <p>Thread-safety: thread-safe; counters are {@link LongAdder}s and the demotions are {@link
 * StreamBlocks}'.
 */
final class ReadFailures {
  private static final Logger LOG = LoggerFactory.getLogger(ScrInputStream.class);

  private static final long DEMOTION_NANOS =
      TimeUnit.MILLISECONDS.toNanos(ScrInputStream.DEMOTION_MILLIS);

  /** What the stock stream does with a corrupt replica (its package-private members). */
  interface Reporter {
    /** Reports the replica of {@code block} on {@code dataNode} to the NameNode, stock's way. */
    void reportCorrupt(ExtendedBlock block, DatanodeInfo dataNode, int replicas);

    /** Keeps the stock fallback of this stream off {@code dataNode}. */
    void keepStockOff(DatanodeInfo dataNode);
  }

  private final String src;
  private final Engine scr;
  private final StreamBlocks blocks;
  private final Ticker ticker;
  private final Reporter reporter;
  private final LongAdder fallbacks = new LongAdder();
  private final LongAdder checksumFallbacks = new LongAdder();
  private final LongAdder reopens = new LongAdder();

  ReadFailures(String src, Engine scr, StreamBlocks blocks, Ticker ticker, Reporter reporter) {
    this.src = src;
    this.scr = scr;
    this.blocks = blocks;
    this.ticker = ticker;
    this.reporter = reporter;
  }

  /**
   * A replica channel was closed under a read by someone else (another thread's interrupt where
   * channels stay interruptible), and the read leased the replica again ({@code LocalRead}).
   */
  void reopened(LocatedBlock block) {
    reopens.increment();
    LOG.debug("A replica of {} in {} was closed under a read; leased it again", block, src);
  }

  /**
   * The engine gave no lease (the reason is counted there). A socket that is backing off, a
   * DataNode that is not healthy (its health is asked per read, so the block is local again as soon
   * as the DataNode answers), or a DataNode the engine remembers not holding the block ({@code
   * AbsentReplicas}), costs nothing to ask again, so nothing is remembered here and every read is
   * counted; otherwise the block is demoted for {@value ScrInputStream#DEMOTION_MILLIS} ms, so a
   * DataNode that refuses for another reason is not asked on every read.
   */
  ReplicaLease noLease(BlockTable t, int i, IOException cause) {
    String path = t.socketPaths[i];
    if (scr.isBackingOff(path)
        || scr.isDataNodeUnwell(path)
        || scr.absentReplicas().remembers(t.blocks[i].getBlock(), path)) {
      fallbacks.increment();
    } else {
      failed(t, i, cause);
    }
    return null;
  }

  /** A lease refused for an expired token: the stream refetched it; this read goes stock. */
  void tokenExpired() {
    fallbacks.increment();
  }

  /**
   * A checksum mismatch in the replica the DataNode at {@code socketPath} served: reports exactly
   * that (DataNode, block) pair to the NameNode as stock does, keeps the stock fallback off that
   * DataNode when the block has other replicas (as stock does after a checksum error), and sends
   * the block the stock way until its locations are refreshed. The DataNode is the one named by the
   * lease, not the one the table chose: with several DataNodes on one host they are the same only
   * because the replica cache keys replicas by DataNode, and a wrong guess would report a good
   * replica.
   */
  void corrupt(BlockTable t, int i, String socketPath, ChecksumException cause) {
    checksumFallbacks.increment();
    LocatedBlock lb = t.blocks[i];
    DatanodeInfo[] locations = lb.getLocations();
    DatanodeInfo bad = null;
    for (DatanodeInfo dn : locations) {
      if (socketPath != null && socketPath.equals(scr.socketPathOf(dn))) {
        bad = dn;
        break;
      }
    }
    if (bad == null) {
      LOG.warn(
          "Checksum error in the replica of {} served through {}, which is none of its locations"
              + " {}: not reported to the NameNode; reading it the stock way",
          lb.getBlock(),
          socketPath,
          java.util.Arrays.toString(locations),
          cause);
    } else {
      LOG.warn(
          "Checksum error in the replica of {} on {}; reporting it to the NameNode and reading"
              + " another replica: {}",
          lb.getBlock(),
          bad,
          cause.getMessage());
      reporter.reportCorrupt(lb.getBlock(), bad, locations.length);
      if (locations.length > 1) {
        reporter.keepStockOff(bad);
      }
    }
    demote(t, i, cause, Long.MAX_VALUE);
  }

  /**
   * Demotes {@code t.blocks[i]} for {@value ScrInputStream#DEMOTION_MILLIS} ms and rebuilds the
   * table.
   */
  void failed(BlockTable t, int i, IOException cause) {
    demote(t, i, cause, ticker.read() + DEMOTION_NANOS);
  }

  private void demote(BlockTable t, int i, IOException cause, long until) {
    fallbacks.increment();
    if (cause != null) {
      LOG.debug(
          "Short-circuit read of {} in {} failed; reading it the stock way",
          t.blocks[i],
          src,
          cause);
    }
    blocks.demote(t, i, until);
  }

  /** Short-circuit attempts that failed or were refused and went stock. */
  long fallbacks() {
    return fallbacks.sum();
  }

  /** Of {@link #fallbacks()}, those caused by a checksum mismatch. */
  long checksumFallbacks() {
    return checksumFallbacks.sum();
  }

  /** Reads that found their replica's channel closed under them and leased it again. */
  long reopens() {
    return reopens.sum();
  }
}
