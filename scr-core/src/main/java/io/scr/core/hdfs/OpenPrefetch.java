package io.scr.core.hdfs;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.ReplicaLease;
import io.scr.core.ScrClient;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prefetch on open (issue 16): when a {@link ScrInputStream} opens a file, the replicas of its
 * local, finalized blocks are leased and released at once on the engine's prefetch threads ({@link
 * ScrClient#submitPrefetch}), so each stays in the replica cache and the stream's first read of it
 * is a cache hit instead of an op-87 exchange on the reading thread.
 *
 * <p><b>Bounds.</b> At most {@code maxBlocks} blocks per stream (the first ones in file order among
 * the blocks the table holds: local socket, finalized, not corrupt). A block is skipped, and
 * counted in {@code PrefetchSkipped}, when the engine's queue is full (open() never waits for it),
 * when the replica cache is at its entry capacity (a prefetch must never evict a replica someone
 * reads), when the cache's replicas hold half its fd budget or more, when the stream closed before
 * the block's turn, or when the lease fails (the read then opens it as it would without prefetch;
 * the failure is counted by the engine as any lease failure).
 *
 * <p>Thread-safety: {@link #start} runs on the opening thread, {@link #cancel} on the closing one,
 * the block tasks on prefetch threads; they share only the cancelled flag and immutable fields.
 */
final class OpenPrefetch {
  private static final Logger LOG = LoggerFactory.getLogger(OpenPrefetch.class);

  /** The first skip for lack of room (queue, cache, fds) in the process is logged. */
  private static final AtomicBoolean NO_ROOM_LOGGED = new AtomicBoolean();

  /**
   * Tests only: run by a prefetch task before it leases its block (to hold prefetch threads on a
   * latch). Null in production.
   */
  static volatile Consumer<LocatedBlock> beforeLeaseForTests;

  private final ScrClient scr;
  private final String src;
  private final AtomicBoolean cancelled = new AtomicBoolean();

  private OpenPrefetch(ScrClient scr, String src) {
    this.scr = scr;
    this.src = src;
  }

  /**
   * Queues the opens of up to {@code maxBlocks} of {@code table}'s short-circuit blocks; returns
   * without waiting for any. Null when nothing was queued.
   */
  static OpenPrefetch start(ScrClient scr, String src, BlockTable table, int maxBlocks) {
    if (maxBlocks <= 0) {
      return null;
    }
    OpenPrefetch prefetch = new OpenPrefetch(scr, src);
    int chosen = 0;
    int rejected = 0;
    for (int i = 0; i < table.blocks.length && chosen < maxBlocks; i++) {
      String path = table.socketPaths[i];
      if (path == null) {
        continue;
      }
      chosen++;
      LocatedBlock lb = table.blocks[i];
      if (!scr.submitPrefetch(() -> prefetch.open(lb, path))) {
        rejected++;
      }
    }
    if (rejected > 0) {
      scr.recordPrefetchSkipped(rejected);
      noRoom("the prefetch queue is full (scr.client.prefetch.queue-size)");
    }
    return chosen > rejected ? prefetch : null;
  }

  /** The stream closed: blocks whose turn has not come are skipped. */
  void cancel() {
    cancelled.set(true);
  }

  private void open(LocatedBlock lb, String path) {
    try {
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return;
      }
      Consumer<LocatedBlock> hook = beforeLeaseForTests;
      if (hook != null) {
        hook.accept(lb);
      }
      if (cancelled.get()) {
        scr.recordPrefetchSkipped(1);
        return;
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
        return;
      }
      ReplicaLease lease = scr.lease(lb.getBlock(), lb.getBlockToken(), path, src);
      if (lease == null) {
        scr.recordPrefetchSkipped(1); // why is counted by the engine as a fallback reason
        return;
      }
      lease.close(); // the replica stays cached for the stream's first read
      scr.recordPrefetched();
    } catch (Exception e) { // an expired token, an I/O error, the engine closing: the read decides
      scr.recordPrefetchSkipped(1);
      LOG.debug("Prefetch of {} in {} failed; its first read opens it", lb.getBlock(), src, e);
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
