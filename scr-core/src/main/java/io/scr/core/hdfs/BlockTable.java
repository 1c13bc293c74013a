package io.scr.core.hdfs;

import io.scr.core.ScrClient;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * An immutable snapshot of a stream's located blocks, laid out for an allocation-free lookup on the
 * read path: sorted start and end offsets, the {@link LocatedBlock} (block and token), and the
 * local DataNode socket to short-circuit it through, or null when the block goes the stock way.
 *
 * <p>A block is short-circuit eligible only when it is finalized from the reader's point of view
 * (it ends within {@link LocatedBlocks#getFileLength()}, which excludes the block being written),
 * is neither corrupt nor striped, has a location {@link ScrClient#socketPathFor} resolves, and is
 * not one the stream has seen fail with the same locations ({@code failed}).
 *
 * <p>Thread-safety: immutable once built; safe to publish through a volatile field.
 */
final class BlockTable {
  static final BlockTable EMPTY =
      new BlockTable(null, new long[0], new long[0], new LocatedBlock[0], new String[0]);

  /** The stream's {@code locatedBlocks} object this table was built from (identity matters). */
  final LocatedBlocks source;

  final long[] starts;
  final long[] ends;
  final LocatedBlock[] blocks;
  final String[] socketPaths;

  private BlockTable(
      LocatedBlocks source,
      long[] starts,
      long[] ends,
      LocatedBlock[] blocks,
      String[] socketPaths) {
    this.source = source;
    this.starts = starts;
    this.ends = ends;
    this.blocks = blocks;
    this.socketPaths = socketPaths;
  }

  /**
   * Builds the table for {@code source}; the caller holds the stream's {@code infoLock} (the block
   * list is mutated in place under it).
   *
   * @param failed located blocks (by identity) whose short-circuit read failed; they go stock until
   *     the stream refreshes their locations, which replaces the instance
   */
  static BlockTable build(LocatedBlocks source, ScrClient scr, Set<LocatedBlock> failed) {
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
      boolean eligible =
          !beingWritten
              && ends[i] <= finalizedLength
              && !lb.isCorrupt()
              && !lb.isStriped()
              && !failed.contains(lb);
      paths[i] = eligible ? localSocket(lb, scr) : null;
    }
    if (size > n) {
      starts[n] = last.getStartOffset();
      ends[n] = last.getStartOffset() + last.getBlockSize();
      blocks[n] = last;
    }
    return new BlockTable(source, starts, ends, blocks, paths);
  }

  private static String localSocket(LocatedBlock lb, ScrClient scr) {
    DatanodeInfo[] locations = lb.getLocations();
    for (DatanodeInfo dn : locations) {
      String path = scr.socketPathFor(dn);
      if (path != null) {
        return path;
      }
    }
    return null;
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
