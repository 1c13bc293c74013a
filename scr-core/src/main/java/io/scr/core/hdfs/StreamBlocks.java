package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.internal.engine.Engine;
import java.io.IOException;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * The {@link BlockTable} of one {@link ScrInputStream} and the blocks it demoted: which blocks a
 * read may short-circuit right now. The table is rebuilt when the stock stream replaced its {@code
 * locatedBlocks} (open-info refresh, periodic location refresh), when a read needs a block the
 * table does not hold yet (the stock stream fetches it from the NameNode first), when a demotion
 * expires, after a short-circuit failure, and after an {@code InvalidToken} (the stream refetches
 * the block's locations and token first).
 *
 * <p>Concurrency: thread-safe. The current table is an immutable snapshot in a volatile field, read
 * without a lock. {@code tableLock} serializes rebuilds and guards the demotions; lock order is the
 * stream's monitor, then {@code tableLock}, then the stock {@code infoLock}. Reading the stock
 * {@code locatedBlocks} field without {@code infoLock} to detect a replacement is a benign race: a
 * stale view only delays the rebuild to the next read, and the old table's blocks are still valid.
 */
final class StreamBlocks {
  /** What the stock stream holds that the table is built from. */
  interface Stock {
    /** The stock stream's current block list (read without its lock). */
    LocatedBlocks locatedBlocks();

    /** The stock stream's {@code infoLock}, which guards its block list. */
    Object infoLock();

    /** The stock stream's file length (its {@code getFileLength()}). */
    long getFileLength();

    /** Fetches the located block at {@code pos} from the NameNode into the stock block list. */
    void loadBlockAt(long pos) throws IOException;
  }

  private final Stock stock;
  private final Engine scr;
  private final Ticker ticker;
  private final Object tableLock = new Object();

  /**
   * Blocks whose short-circuit read failed (by identity), with the ticker time until which they go
   * stock; Long.MAX_VALUE: until their locations are refreshed.
   */
  @GuardedBy("tableLock")
  private final Map<LocatedBlock, Long> demotedUntil = new IdentityHashMap<>();

  /**
   * The current table. Package-private so the stream's hit path reads it as a field (it checks
   * itself that the table is current); written only under {@code tableLock}.
   */
  volatile BlockTable table = BlockTable.EMPTY;

  StreamBlocks(Stock stock, Engine scr, Ticker ticker) {
    this.stock = stock;
    this.scr = scr;
    this.ticker = ticker;
  }

  /**
   * The current table, rebuilt first if the stock stream replaced its block list, lacks pos, or a
   * demotion in it has expired.
   */
  BlockTable tableFor(long pos) throws IOException {
    BlockTable t = table;
    if (t.source == stock.locatedBlocks()
        && t.indexOf(pos) >= 0
        && (t.retryAtNanos == Long.MAX_VALUE || !t.retryDue(ticker.read()))) {
      return t;
    }
    if (t.indexOf(pos) < 0 && pos < stock.getFileLength()) {
      stock.loadBlockAt(pos);
    }
    return rebuild(t);
  }

  /**
   * Sends {@code t.blocks[i]} the stock way until ticker time {@code until} (Long.MAX_VALUE: until
   * its locations are refreshed; a shorter demotion never shortens that one), and rebuilds.
   */
  void demote(BlockTable t, int i, long until) {
    synchronized (tableLock) {
      Long earlier = demotedUntil.get(t.blocks[i]);
      if (earlier == null || earlier != Long.MAX_VALUE) {
        demotedUntil.put(t.blocks[i], until);
      }
    }
    rebuild(null);
  }

  /**
   * Rebuilds the table, unless another thread already replaced {@code seen} with one built from the
   * current block list; {@code seen == null} forces the rebuild.
   */
  BlockTable rebuild(BlockTable seen) {
    synchronized (tableLock) {
      BlockTable current = table;
      long now = ticker.read();
      if (seen != null
          && current != seen
          && current.source == stock.locatedBlocks()
          && !current.retryDue(now)) {
        return current;
      }
      BlockTable fresh;
      synchronized (stock.infoLock()) {
        LocatedBlocks blocks = stock.locatedBlocks();
        if (!demotedUntil.isEmpty()) {
          // Instances no longer in the block list were refreshed, and expired demotions are over:
          // forget both.
          Map<LocatedBlock, Boolean> listed = new IdentityHashMap<>();
          for (LocatedBlock lb : blocks.getLocatedBlocks()) {
            listed.put(lb, Boolean.TRUE);
          }
          if (blocks.getLastLocatedBlock() != null) {
            listed.put(blocks.getLastLocatedBlock(), Boolean.TRUE); // the block being written
          }
          demotedUntil
              .entrySet()
              .removeIf(e -> !listed.containsKey(e.getKey()) || expired(e.getValue(), now));
        }
        fresh = BlockTable.build(blocks, scr, demotedUntil, now);
      }
      table = fresh;
      return fresh;
    }
  }

  private static boolean expired(long until, long now) {
    return until != Long.MAX_VALUE && now - until >= 0;
  }

  /**
   * The socket path of the DataNode the current table short-circuits the block at {@code pos}
   * through, or null when that block goes the stock way (for tests and diagnostics).
   */
  String socketPathAt(long pos) throws IOException {
    BlockTable t = tableFor(pos);
    int i = t.indexOf(pos);
    return i >= 0 ? t.socketPaths[i] : null;
  }

  /** Blocks the current table short-circuits. */
  int localBlockCount() {
    return table.localBlockCount();
  }
}
