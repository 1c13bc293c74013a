package io.scr.core.hdfs;

import io.scr.core.FallbackReason;
import io.scr.core.internal.engine.Engine;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * An immutable snapshot of a stream's located blocks, laid out for an allocation-free lookup on the
 * read path: sorted start and end offsets, the {@link LocatedBlock} (block and token), and the
 * local DataNode socket to short-circuit it through, or null when the block goes the stock way.
 *
 * <p>A block is short-circuit eligible when it is complete from the reader's point of view (it ends
 * within {@link LocatedBlocks#getFileLength()}) or is the block being written ({@link
 * #beingWritten}: it ends at the visible length the stream measured, and is read only up to there,
 * {@code io.scr.core.internal.replica.TailReads}), is neither corrupt nor striped, has a location
 * on this host with a configured socket ({@link Engine#socketPathOf}), and is not demoted by the
 * stream right now ({@code demotedUntil}).
 *
 * <p><b>Only lasting facts are built in.</b> Whether a block's DataNode is on this host and which
 * socket serves it do not change while the block list stands; whether that socket is backing off
 * does, so it is not decided here: the read checks it when it leases (a table built during a 2 s
 * backoff must not keep the block stock for the stream's life). A demotion has a deadline, and
 * {@link #retryAtNanos} tells the stream when to rebuild. Blocks without a local socket carry the
 * {@link FallbackReason} the stream counts on every read of them ({@link #unreachable}).
 *
 * <p>Thread-safety: immutable once built; safe to publish through a volatile field.
 */
final class BlockTable {
  static final BlockTable EMPTY =
      new BlockTable(
          null,
          new long[0],
          new long[0],
          new LocatedBlock[0],
          new String[0],
          new FallbackReason[0],
          new boolean[0],
          Long.MAX_VALUE);

  /** The stream's {@code locatedBlocks} object this table was built from (identity matters). */
  final LocatedBlocks source;

  final long[] starts;
  final long[] ends;
  final LocatedBlock[] blocks;
  final String[] socketPaths;

  /**
   * Per block without a socket: why no local DataNode can serve it ({@code NOT_LOCAL}, {@code
   * NOT_CONFIGURED}, {@code DISABLED}), counted per read; null for blocks with a socket and for
   * those that go stock for a reason of their own (being written, corrupt, demoted).
   */
  final FallbackReason[] unreachable;

  /**
   * Per block: whether it is the block being written, whose end is the stream's visible length and
   * whose replica may still grow (read with {@code TailReads}).
   */
  final boolean[] beingWritten;

  /** The earliest demotion deadline ({@code System.nanoTime} scale), or Long.MAX_VALUE. */
  final long retryAtNanos;

  private BlockTable(
      LocatedBlocks source,
      long[] starts,
      long[] ends,
      LocatedBlock[] blocks,
      String[] socketPaths,
      FallbackReason[] unreachable,
      boolean[] beingWritten,
      long retryAtNanos) {
    this.beingWritten = beingWritten;
    this.source = source;
    this.starts = starts;
    this.ends = ends;
    this.blocks = blocks;
    this.socketPaths = socketPaths;
    this.unreachable = unreachable;
    this.retryAtNanos = retryAtNanos;
  }

  /**
   * Builds the table for {@code source}; the caller holds the stream's {@code infoLock} (the block
   * list is mutated in place under it).
   *
   * @param demotedUntil located blocks (by identity) whose short-circuit read failed, with the time
   *     until which they go stock ({@code Long.MAX_VALUE}: until the stream refreshes their
   *     locations, which replaces the instance)
   * @param now the current time on the scale of {@code demotedUntil}
   */
  static BlockTable build(
      LocatedBlocks source, Engine scr, Map<LocatedBlock, Long> demotedUntil, long now) {
    List<LocatedBlock> list = source.getLocatedBlocks();
    LocatedBlock last = source.isLastBlockComplete() ? null : source.getLastLocatedBlock();
    boolean lastListed = false;
    int n = list.size();
    if (last != null) {
      for (int i = 0; i < n; i++) {
        if (list.get(i).getBlock().getBlockId() == last.getBlock().getBlockId()) {
          lastListed = true;
          break;
        }
      }
    }
    int size = n + (last != null && !lastListed ? 1 : 0);
    long[] starts = new long[size];
    long[] ends = new long[size];
    LocatedBlock[] blocks = new LocatedBlock[size];
    String[] paths = new String[size];
    FallbackReason[] unreachable = new FallbackReason[size];
    boolean[] growing = new boolean[size];
    long retryAt = Long.MAX_VALUE;
    long finalizedLength = source.getFileLength();
    for (int i = 0; i < n; i++) {
      LocatedBlock lb = list.get(i);
      boolean beingWritten =
          last != null && lb.getBlock().getBlockId() == last.getBlock().getBlockId();
      // The block being written: its length here may lag the one the stream measured on open.
      LocatedBlock effective = beingWritten ? last : lb;
      starts[i] = effective.getStartOffset();
      ends[i] = effective.getStartOffset() + effective.getBlockSize();
      blocks[i] = effective;
      Long until = demotedUntil.isEmpty() ? null : demotedUntil.get(effective);
      boolean demoted = until != null && (until == Long.MAX_VALUE || now - until < 0);
      if (demoted && until != Long.MAX_VALUE) {
        retryAt = Math.min(retryAt, until);
      }
      growing[i] = beingWritten;
      boolean eligible =
          (beingWritten ? ends[i] > starts[i] : ends[i] <= finalizedLength)
              && !lb.isCorrupt()
              && !lb.isStriped()
              && !demoted;
      if (eligible) {
        paths[i] = localSocket(lb, scr);
        if (paths[i] == null) {
          unreachable[i] = unreachableReason(lb, scr);
        }
      }
    }
    if (size > n) {
      starts[n] = last.getStartOffset();
      ends[n] = last.getStartOffset() + last.getBlockSize();
      blocks[n] = last;
      growing[n] = true;
      Long until = demotedUntil.isEmpty() ? null : demotedUntil.get(last);
      boolean demoted = until != null && (until == Long.MAX_VALUE || now - until < 0);
      if (ends[n] > starts[n] && !last.isCorrupt() && !last.isStriped() && !demoted) {
        paths[n] = localSocket(last, scr);
        if (paths[n] == null) {
          unreachable[n] = unreachableReason(last, scr);
        }
      }
    }
    return new BlockTable(source, starts, ends, blocks, paths, unreachable, growing, retryAt);
  }

  private static String localSocket(LocatedBlock lb, Engine scr) {
    for (DatanodeInfo dn : lb.getLocations()) {
      String path = scr.unreachableReason(dn) == null ? scr.socketPathOf(dn) : null;
      if (path != null) {
        return path;
      }
    }
    return null;
  }

  /** Why none of the block's locations has a local socket (the last location's reason). */
  private static FallbackReason unreachableReason(LocatedBlock lb, Engine scr) {
    FallbackReason reason = FallbackReason.NOT_LOCAL;
    for (DatanodeInfo dn : lb.getLocations()) {
      FallbackReason r = scr.unreachableReason(dn);
      if (r != null) {
        reason = r;
      }
    }
    return reason;
  }

  /** Whether a demotion in this table has expired at {@code now}, so a rebuild would lift it. */
  boolean retryDue(long now) {
    return retryAtNanos != Long.MAX_VALUE && now - retryAtNanos >= 0;
  }

  /** The index of the block holding file offset {@code pos}, or -1 when the table lacks it. */
  int indexOf(long pos) {
    int lo = 0;
    int hi = starts.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (pos < starts[mid]) {
        hi = mid - 1;
      } else if (pos >= ends[mid]) {
        lo = mid + 1;
      } else {
        return mid;
      }
    }
    return -1;
  }

  /** How many blocks this table short-circuits (for tests and diagnostics). */
  int localBlockCount() {
    int count = 0;
    for (String p : socketPaths) {
      if (p != null) {
        count++;
      }
    }
    return count;
  }
}
