package io.scr.core.hdfs;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.ScrKeys;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.replica.PrefetchResult;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prefetch on open: when a {@link ScrInputStream} opens a file, the replicas of its local,
 * finalized blocks are opened ahead on one of the engine's prefetch threads ({@link
 * Engine#submitPrefetch}) and left in the replica cache, so the stream's first read of each is a
 * cache hit instead of an op-87 exchange on the reading thread.
 *
 * <p><b>One task per file, one block at a time.</b> The file's blocks are opened in file order by a
 * single task, each through the cache's single load per replica ({@link Engine#prefetch}), so the
 * exchanges follow one another on one pooled connection: a prefetch holds at most one connection
 * and one exchange at a time, whatever the file's size. A read never waits behind other blocks: a
 * block whose turn has not come is not loading, so its first read opens it itself (the prefetch
 * then finds it cached and moves on); a read of the block being opened waits for that one exchange,
 * which started before it and which it would otherwise have repeated. The absent-replica memory and
 * the backoff are consulted before and inside each load, so a prefetch and a read of a block the
 * DataNode refuses ask it once between them.
 *
 * <p><b>A reader that keeps catching up takes over.</b> A reader that scans the file in the
 * prefetch's order finds each next block's exchange in flight and waits for it; after two such
 * blocks in a row the prefetch stops and the reader opens its own blocks ({@link #readerAt}).
 *
 * <p><b>One batched exchange where the peer takes it.</b> When the engine knows the DataNode offers
 * the scr shim's batched fd request ({@code batch-fds}; known from an earlier probe, never probed
 * here), the file's blocks on it go in one op-127 BATCH_FDS exchange ({@link Engine#prefetchBatch},
 * up to {@link ShortCircuitExchanges#MAX_BLOCKS_PER_BATCH_FDS} blocks per exchange). A read of a
 * block of the batch takes it over while the batch is not sent yet, and waits for the batch's
 * answer once it is. A stock DataNode waits for the client's receipt byte after every fd answer
 * before it reads the next request, so op-87 requests cannot be written ahead on one connection:
 * there the blocks go one exchange after another, as above.
 *
 * <p><b>Bounds.</b> At most {@code maxBlocks} blocks per stream (the first ones in file order among
 * the blocks the table holds: local socket, finalized, not corrupt). Blocks are skipped, and
 * counted in {@code PrefetchSkipped}, when the engine's queue is full (open() never waits for it;
 * all the file's blocks), when the replica cache is at its entry capacity (a prefetch must never
 * evict a replica someone reads), when the cache's replicas hold half its fd budget or more, when
 * the stream closed before the block's turn, or when the open fails (the read then opens it as it
 * would without prefetch). A replica already cached is neither.
 *
 * <p>Thread-safety: {@link #start} runs on the opening thread, {@link #cancel} on the closing one,
 * {@link #readerAt} on reading threads, the task on a prefetch thread; they share the cancelled
 * flag, the volatile index of the block being opened and finished flag, the racy {@link
 * #lastCaughtUp} and immutable fields.
 */
final class OpenPrefetch {
  private static final Logger LOG = LoggerFactory.getLogger(OpenPrefetch.class);

  /** The first skip for lack of room (queue, cache, fds) in the process is logged. */
  private static final AtomicBoolean NO_ROOM_LOGGED = new AtomicBoolean();

  private final Engine scr;
  private final String src;
  private final LocatedBlock[] blocks;
  private final String[] paths;
  private final AtomicBoolean cancelled = new AtomicBoolean();

  /** The index in {@link #blocks} of the block the task is opening on its own now, or -1. */
  private volatile int opening = -1;

  /**
   * The last index at which a read found the task opening its block ({@link #readerAt}). Plain and
   * racy: readers of one stream may write it at once, which only changes whether a catch-up counts
   * as the second in a row.
   */
  private int lastCaughtUp = -2;

  /** Set when the task has ended, however: no block will be opening any more. */
  private volatile boolean finished;

  private OpenPrefetch(Engine scr, String src, LocatedBlock[] blocks, String[] paths) {
    this.scr = scr;
    this.src = src;
    this.blocks = blocks;
    this.paths = paths;
  }

  /**
   * Queues the opens of up to {@code maxBlocks} of {@code table}'s short-circuit blocks as one
   * task; returns without waiting for it. Null when nothing was queued.
   */
  static OpenPrefetch start(Engine scr, String src, BlockTable table, int maxBlocks) {
    if (maxBlocks <= 0) {
      return null;
    }
    List<LocatedBlock> chosen = new ArrayList<>();
    List<String> chosenPaths = new ArrayList<>();
    for (int i = 0; i < table.blocks.length && chosen.size() < maxBlocks; i++) {
      String path = table.socketPaths[i];
      if (path != null && !table.beingWritten[i]) { // a growing replica is opened by its reader
        chosen.add(table.blocks[i]);
        chosenPaths.add(path);
      }
    }
    if (chosen.isEmpty()) {
      return null;
    }
    OpenPrefetch prefetch =
        new OpenPrefetch(
            scr, src, chosen.toArray(new LocatedBlock[0]), chosenPaths.toArray(new String[0]));
    if (!scr.submitPrefetch(prefetch::run)) {
      scr.recordPrefetchSkipped(chosen.size());
      noRoom("the prefetch queue is full (" + ScrKeys.PREFETCH_QUEUE_SIZE.name() + ")");
      return null;
    }
    return prefetch;
  }

  /** The stream closed: blocks whose turn has not come are skipped. */
  void cancel() {
    cancelled.set(true);
  }

  /**
   * A read of the stream is about to lease {@code lb}. A read that finds the task opening that very
   * block has caught up with the prefetch: it waits for the prefetch's exchange, and being woken by
   * another thread costs more than making the exchange itself (a reader scanning the file block by
   * block measured 1.3x the median of scr without prefetch). When that happens on two blocks in a
   * row, the reader is scanning in the prefetch's order and will keep catching up, so the rest of
   * the prefetch is cancelled (skipped, counted in {@code PrefetchSkipped}) and the reader opens
   * its own blocks, as without prefetch. Any reader thread; a volatile read when not caught up.
   * Returns false once the task has ended (every block opened, skipped or cancelled): the stream
   * then drops this prefetch, so its later reads do not come here.
   */
  boolean readerAt(LocatedBlock lb) {
    int c = opening;
    if (c < 0 || blocks[c] != lb) {
      return !finished;
    }
    if (lastCaughtUp == c - 1 && !cancelled.getAndSet(true)) {
      LOG.debug(
          "A reader of {} caught up with its prefetch twice in a row; it opens the rest", src);
    }
    lastCaughtUp = c;
    return true;
  }

  private void run() {
    try {
      openAll();
    } finally {
      finished = true;
    }
  }

  private void openAll() {
    int i = 0;
    while (i < blocks.length) {
      int end = i + 1;
      while (end < blocks.length
          && end - i < ShortCircuitExchanges.MAX_BLOCKS_PER_BATCH_FDS
          && paths[end].equals(paths[i])) {
        end++;
      }
      boolean goOn;
      if (end - i > 1 && batchable(paths[i])) {
        goOn = openBatch(i, end);
        i = end;
      } else {
        goOn = open(i);
        i++;
      }
      if (!goOn) {
        scr.recordPrefetchSkipped(blocks.length - i); // the rest: closed, or interrupted
        return;
      }
    }
  }

  /**
   * Whether the DataNode at {@code path} is known to take batched fd requests. Only a known answer
   * counts: asking (a HELLO on a new connection) would cost a stock DataNode a connection it
   * closes, beside the one the prefetch uses; the answer becomes known with the engine's first slot
   * release to that DataNode, or any other probe.
   */
  private boolean batchable(String path) {
    PeerExtensions.Features f = scr.extensions().knownFeatures(path);
    return f != null && f.batchFds();
  }

  /**
   * Opens blocks [from, to) of one DataNode that offers batched fd requests in one exchange; the
   * blocks it could not open because the peer failed the extension are opened one by one. False
   * when the rest of the file must be skipped too.
   */
  private boolean openBatch(int from, int to) {
    String path = paths[from];
    if (cancelled.get()) {
      scr.recordPrefetchSkipped(to - from);
      return false;
    }
    scr.seams().beforePrefetchOpen(blocks[from]);
    if (cancelled.get()) {
      scr.recordPrefetchSkipped(to - from);
      return false;
    }
    LeaseCacheStats stats = scr.cacheStats();
    long room =
        Math.min(
            stats.capacity() - stats.entryCount(), (stats.fdBudget() / 2 - stats.openFds()) / 2);
    int n = (int) Math.max(0, Math.min(to - from, room));
    if (n < to - from) {
      scr.recordPrefetchSkipped(to - from - n);
      noRoom(stats);
    }
    if (n == 0) {
      return true;
    }
    List<ExtendedBlock> batch = new ArrayList<>(n);
    List<Token<BlockTokenIdentifier>> tokens = new ArrayList<>(n);
    for (int i = from; i < from + n; i++) {
      batch.add(blocks[i].getBlock());
      tokens.add(blocks[i].getBlockToken());
    }
    PrefetchResult[] results;
    try {
      results = scr.prefetchBatch(batch, tokens, path, src);
    } catch (InterruptedIOException e) {
      scr.recordPrefetchSkipped(n);
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      scr.recordPrefetchSkipped(n);
      LOG.debug("Batched prefetch of {} blocks of {} failed", n, src, e);
      return true;
    }
    // The peer failed the extension: stock ops from now on, one block at a time.
    boolean oneByOne = !batchable(path);
    for (int i = 0; i < n; i++) {
      if (results[i] != PrefetchResult.NOT_OPENED) {
        continue;
      }
      if (!oneByOne) {
        scr.recordPrefetchSkipped(1);
      } else if (!open(from + i)) {
        scr.recordPrefetchSkipped(n - i - 1);
        return false;
      }
    }
    return true;
  }

  /** Opens block {@code index}; false when the rest of the file must be skipped too. */
  private boolean open(int index) {
    LocatedBlock lb = blocks[index];
    String path = paths[index];
    opening = index;
    try {
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return false;
      }
      scr.seams().beforePrefetchOpen(lb);
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return false;
      }
      LeaseCacheStats stats = scr.cacheStats();
      // Half the fd budget is left to the readers, and a load at capacity would evict a replica
      // someone reads: the prefetch stops short of both.
      if (stats.entryCount() >= stats.capacity() || stats.openFds() >= stats.fdBudget() / 2) {
        scr.recordPrefetchSkipped(1);
        noRoom(stats);
        return true;
      }
      if (scr.prefetch(lb.getBlock(), lb.getBlockToken(), path, src) == PrefetchResult.NOT_OPENED) {
        scr.recordPrefetchSkipped(1);
      }
      return true;
    } catch (InterruptedIOException e) {
      scr.recordPrefetchSkipped(1); // the engine is shutting its prefetch threads down
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) { // an expired token, the engine closing: the read decides
      scr.recordPrefetchSkipped(1);
      LOG.debug("Prefetch of {} in {} failed; its first read opens it", lb.getBlock(), src, e);
      return true;
    } finally {
      opening = -1;
    }
  }

  private static void noRoom(LeaseCacheStats stats) {
    noRoom(
        "the replica cache holds "
            + stats.entryCount()
            + " of "
            + stats.capacity()
            + " replicas and "
            + stats.openFds()
            + " of "
            + stats.fdBudget()
            + " fds (prefetch never evicts and stays below half the fd budget)");
  }

  private static void noRoom(String why) {
    if (NO_ROOM_LOGGED.compareAndSet(false, true)) {
      LOG.info(
          "Prefetch on open skips blocks: {} (logged once per process; counted in"
              + " PrefetchSkipped)",
          why);
    }
  }
}
