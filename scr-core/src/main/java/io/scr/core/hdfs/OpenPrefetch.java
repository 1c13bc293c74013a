package io.scr.core.hdfs;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.ScrClient;
import io.scr.core.replica.ReplicaManager;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prefetch on open (issue 16): when a {@link ScrInputStream} opens a file, the replicas of its
 * local, finalized blocks are opened ahead on one of the engine's prefetch threads ({@link
 * ScrClient#submitPrefetch}) and left in the replica cache, so the stream's first read of each is a
 * cache hit instead of an op-87 exchange on the reading thread.
 *
 * <p><b>One task per file, one block at a time.</b> The file's blocks are opened in file order by a
 * single task, each through the cache's single load per replica ({@link ScrClient#prefetch}), so
 * the exchanges follow one another on one pooled connection: a prefetch holds at most one
 * connection and one exchange at a time, whatever the file's size. A read never waits behind other
 * blocks: a block whose turn has not come is not loading, so its first read opens it itself (the
 * prefetch then finds it cached and moves on); a read of the block being opened waits for that one
 * exchange, which started before it and which it would otherwise have repeated. The absent-replica
 * memory and the backoff are consulted before and inside each load, so a prefetch and a read of a
 * block the DataNode refuses ask it once between them.
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
 * the task on a prefetch thread; they share only the cancelled flag and immutable fields.
 */
final class OpenPrefetch {
  private static final Logger LOG = LoggerFactory.getLogger(OpenPrefetch.class);

  /** The first skip for lack of room (queue, cache, fds) in the process is logged. */
  private static final AtomicBoolean NO_ROOM_LOGGED = new AtomicBoolean();

  /**
   * Tests only: run by a prefetch task before it opens each block (to hold prefetch threads on a
   * latch). Null in production.
   */
  static volatile Consumer<LocatedBlock> beforeLeaseForTests;

  private final ScrClient scr;
  private final String src;
  private final LocatedBlock[] blocks;
  private final String[] paths;
  private final AtomicBoolean cancelled = new AtomicBoolean();

  private OpenPrefetch(ScrClient scr, String src, LocatedBlock[] blocks, String[] paths) {
    this.scr = scr;
    this.src = src;
    this.blocks = blocks;
    this.paths = paths;
  }

  /**
   * Queues the opens of up to {@code maxBlocks} of {@code table}'s short-circuit blocks as one
   * task; returns without waiting for it. Null when nothing was queued.
   */
  static OpenPrefetch start(ScrClient scr, String src, BlockTable table, int maxBlocks) {
    if (maxBlocks <= 0) {
      return null;
    }
    List<LocatedBlock> chosen = new ArrayList<>();
    List<String> chosenPaths = new ArrayList<>();
    for (int i = 0; i < table.blocks.length && chosen.size() < maxBlocks; i++) {
      String path = table.socketPaths[i];
      if (path != null) {
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
      noRoom("the prefetch queue is full (scr.client.prefetch.queue-size)");
      return null;
    }
    return prefetch;
  }

  /** The stream closed: blocks whose turn has not come are skipped. */
  void cancel() {
    cancelled.set(true);
  }

  private void run() {
    for (int i = 0; i < blocks.length; i++) {
      if (!open(blocks[i], paths[i])) {
        scr.recordPrefetchSkipped(blocks.length - i - 1); // the rest: closed, or interrupted
        return;
      }
    }
  }

  /** Opens one block; false when the rest of the file must be skipped too. */
  private boolean open(LocatedBlock lb, String path) {
    try {
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return false;
      }
      Consumer<LocatedBlock> hook = beforeLeaseForTests;
      if (hook != null) {
        hook.accept(lb);
      }
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return false;
      }
      LeaseCacheStats stats = scr.cacheStats();
      // Half the fd budget is left to the readers, and a load at capacity would evict a replica
      // someone reads: the prefetch stops short of both.
      if (stats.entryCount() >= stats.capacity() || stats.openFds() >= stats.fdBudget() / 2) {
        scr.recordPrefetchSkipped(1);
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
        return true;
      }
      if (scr.prefetch(lb.getBlock(), lb.getBlockToken(), path, src)
          == ReplicaManager.PrefetchResult.NOT_OPENED) {
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
    }
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
