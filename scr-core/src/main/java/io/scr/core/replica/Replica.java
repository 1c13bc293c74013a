package io.scr.core.replica;

import io.scr.cache.CachedValue;
import io.scr.cache.Ticker;
import io.scr.core.metrics.PathCounters;
import io.scr.core.read.ReplicaFiles;
import io.scr.shm.Slot;
import io.scr.shm.SlotPool;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An open local replica: its two files, its generation stamp, and the shared-memory slot the
 * DataNode clears when the replica is deleted, moved or replaced. Without a slot the replica goes
 * stale by age.
 *
 * <p>Ownership: the {@link io.scr.cache.LeaseCache} owns it and calls {@link #close()} once, on its
 * closer thread, after the last lease: that closes both files and hands the slot back to its pool,
 * which tells the DataNode in the background (op 88). Readers never close it.
 *
 * <p>Thread-safety: immutable apart from the files' open state and the slot word; {@link
 * #isValid()} is three volatile loads (slot word, two channel states) or a clock read and two loads
 * (no slot).
 */
public final class Replica implements CachedValue {
  private final ReplicaFiles files;
  private final long generationStamp;
  private final Slot slot;
  private final SlotPool slotPool;
  private final Ticker ticker;
  private final long staleAtNanos;
  private final PathCounters counters;
  private final String socketPath;

  /**
   * Set when a prefetch on open opened the replica and no reader has leased it yet; null for a
   * replica a reader opened (nothing to count on its hits).
   */
  private final AtomicBoolean unreadPrefetch;

  Replica(
      String socketPath,
      ReplicaFiles files,
      long generationStamp,
      Slot slot,
      SlotPool slotPool,
      Ticker ticker,
      long staleAfterNanos,
      PathCounters counters,
      boolean prefetched) {
    this.unreadPrefetch = prefetched ? new AtomicBoolean(true) : null;
    this.socketPath = socketPath;
    this.counters = counters;
    this.files = files;
    this.generationStamp = generationStamp;
    if (slot != null && slotPool == null) {
      throw new IllegalArgumentException("a replica's slot needs the pool that releases it");
    }
    this.slot = slot;
    this.slotPool = slotPool;
    this.ticker = ticker;
    this.staleAtNanos = ticker.read() + staleAfterNanos;
  }

  /** The open files. */
  public ReplicaFiles files() {
    return files;
  }

  /** The socket path of the DataNode that passed this replica's fds. */
  public String socketPath() {
    return socketPath;
  }

  /** The generation stamp the replica was opened with. */
  public long generationStamp() {
    return generationStamp;
  }

  /** The slot, or null when the replica was opened without shared memory. */
  public Slot slot() {
    return slot;
  }

  /**
   * True exactly once, for the first reader lease of a replica a prefetch opened (a prefetch hit);
   * false for every other lease. One volatile load once taken.
   */
  boolean takeUnreadPrefetch() {
    AtomicBoolean u = unreadPrefetch;
    return u != null && u.get() && u.compareAndSet(true, false);
  }

  /** The counters of the socket path the replica was opened through. */
  PathCounters counters() {
    return counters;
  }

  @Override
  public int fdCost() {
    return files.fdCount();
  }

  /**
   * Whether the replica may still be served: its slot is VALID (or, without a slot, it is younger
   * than the stale threshold) and both channels are open. A channel closes under everyone when a
   * thread is interrupted in a read ({@code FileChannel} is interruptible); the replica is then
   * replaced rather than failing every later read.
   */
  @Override
  public boolean isValid() {
    boolean fresh = slot != null ? slot.isValid() : ticker.read() - staleAtNanos < 0;
    return fresh && files.isOpen();
  }

  @Override
  public void close() throws IOException {
    try {
      files.close();
    } finally {
      if (slot != null) {
        slotPool.release(slot);
      }
    }
  }

  @Override
  public String toString() {
    return "Replica{"
        + files.blockName()
        + ", gs="
        + generationStamp
        + ", from "
        + socketPath
        + ", slot="
        + slot
        + "}";
  }
}
