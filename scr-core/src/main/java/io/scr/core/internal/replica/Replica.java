package io.scr.core.internal.replica;

import io.scr.cache.CachedValue;
import io.scr.cache.Ticker;
import io.scr.core.internal.read.ReplicaFiles;
import io.scr.core.stats.PathCounters;
import io.scr.shm.Slot;
import io.scr.shm.SlotPool;
import java.io.FileDescriptor;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * An open local replica: its two files, its generation stamp, and the shared-memory slot the
 * DataNode clears when the replica is deleted, moved or replaced. Without a slot the replica goes
 * stale by age.
 *
 * <p>Ownership: the {@link io.scr.cache.LeaseCache} owns it and calls {@link #close()} once, on its
 * closer thread, after the last lease: that closes both files and hands the slot back to its pool,
 * which tells the DataNode in the background (op 88). Readers never close it.
 *
 * <p><b>Orphaned.</b> When its DataNode process goes away (the segment's connection closed with the
 * slot still VALID, or the whole segment torn down at once: see {@link OrphanedReplicas}) the
 * replica is <em>orphaned</em>: it stays valid although its slot no longer is, for at most the
 * stale threshold of a replica without a slot, until a DataNode on its socket vouches for it again
 * with a new slot ({@link #adoptSlot}, re-validated) or says it changed or is gone ({@link
 * #dropOrphan}). A finalized replica of one generation stamp cannot change without a running
 * DataNode (docs/reliability.md, "Open replicas outlive the DataNode").
 *
 * <p>Thread-safety: immutable apart from the files' open state, the slot (replaced once when the
 * replica is re-validated) and the orphan state; {@link #isValid()} is four volatile loads (orphan
 * flag, slot, slot word, two channel states) or a clock read and two loads (no slot, or orphaned).
 * The slot swap and {@link #close()} take this object's monitor, so a slot adopted by a closing
 * replica is given back by the re-validator, never leaked.
 */
public final class Replica implements CachedValue {
  private final ReplicaFiles files;
  private final long generationStamp;
  private final SlotPool slotPool;

  /**
   * The slot the DataNode vouches through; replaced by a new DataNode's on re-validation. Written
   * under this object's monitor, read without it.
   */
  private volatile Slot slot;

  @com.google.errorprone.annotations.concurrent.GuardedBy("this")
  private boolean closed;

  /** Set while the replica's DataNode is away (see the class comment). */
  private volatile boolean orphaned;

  /** When an orphaned replica goes stale (ticker nanos), written before {@link #orphaned}. */
  private volatile long orphanStaleAtNanos;

  private final long staleAfterNanos;

  /**
   * What a DataNode needs to vouch for this replica again (block with its generation stamp, token,
   * the block file's fd to compare identities); null block for a replica without a slot.
   */
  private final ExtendedBlock block;

  private final Token<BlockTokenIdentifier> token;
  private final FileDescriptor dataFd;

  /**
   * The endpoint that holds this replica while it is open (told when it closes, asked when the slot
   * turns invalid whether its DataNode went away); null for a replica without a slot.
   */
  private final DataNodeEndpoint endpoint;

  private final Ticker ticker;
  private final long staleAtNanos;
  private final PathCounters counters;
  private final String socketPath;

  /**
   * Set when a prefetch on open opened the replica and no reader has leased it yet; null for a
   * replica a reader opened (nothing to count on its hits).
   */
  private final AtomicBoolean unreadPrefetch;

  /**
   * The latest replica state its DataNode reported, for a replica of a block being written ({@link
   * TailReads}); null until asked. Written by any reader, racily: every snapshot stays true for the
   * bytes it covers, so a reader that replaces a newer one with an older one only costs the next
   * reader a request.
   */
  volatile io.scr.core.internal.read.TailSnapshot tail;

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
    this(
        socketPath,
        files,
        generationStamp,
        slot,
        slotPool,
        ticker,
        staleAfterNanos,
        counters,
        prefetched,
        null,
        null,
        null,
        null);
  }

  /**
   * A replica that can outlive its DataNode: {@code block} (its generation stamp is the one
   * opened), {@code token} and the received block-file fd ({@code dataFd}: the files' data channel
   * owns it) let a new DataNode re-validate it; {@code endpoint} holds it until it closes.
   */
  Replica(
      String socketPath,
      ReplicaFiles files,
      long generationStamp,
      Slot slot,
      SlotPool slotPool,
      Ticker ticker,
      long staleAfterNanos,
      PathCounters counters,
      boolean prefetched,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      FileDescriptor dataFd,
      DataNodeEndpoint endpoint) {
    this.block = block == null ? null : new ExtendedBlock(block);
    this.token = token;
    this.dataFd = dataFd;
    this.endpoint = endpoint;
    this.staleAfterNanos = staleAfterNanos;
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

  /** The block as opened (its generation stamp the replica's), or null if not re-validatable. */
  ExtendedBlock block() {
    return block;
  }

  /** The block token the replica was opened with (null without tokens). */
  Token<BlockTokenIdentifier> token() {
    return token;
  }

  /** The received data fd (owned by the files' channel), or null. */
  FileDescriptor dataFd() {
    return dataFd;
  }

  /** Whether the replica is read without a DataNode vouching for it now. One volatile load. */
  public boolean isOrphaned() {
    return orphaned;
  }

  /**
   * Orphans the replica at {@code nowNanos}: it stays valid for the stale threshold, or until
   * re-validated or dropped. Called before the slot pool invalidates the dead segment's slots.
   *
   * <p>The replica of a block being written (its files opened growing) is never orphaned: a
   * DataNode that restarts may truncate it in place or reload it with a new length (block
   * recovery), so without its DataNode nothing vouches for its bytes past the last read.
   *
   * @return false if it was already orphaned, or closed, or cannot be re-validated, or is growing
   */
  boolean orphan(long nowNanos) {
    synchronized (this) {
      if (closed || orphaned || block == null || slot == null || files.isGrowing()) {
        return false;
      }
      orphanStaleAtNanos = nowNanos + staleAfterNanos;
      orphaned = true; // after the deadline: a reader that sees the flag sees the deadline
      return true;
    }
  }

  /** Whether an orphaned replica is past its stale threshold at {@code nowNanos}. */
  boolean orphanExpired(long nowNanos) {
    return orphaned && nowNanos - orphanStaleAtNanos >= 0;
  }

  /**
   * A DataNode vouched for this replica again with {@code fresh} (registered for this block by op
   * 87): it becomes the replica's slot and the orphan state ends. Returns the old slot for the
   * caller to release, or null when the replica closed meanwhile (then the caller releases {@code
   * fresh}, which this replica never took).
   */
  Slot adoptSlot(Slot fresh) {
    synchronized (this) {
      if (closed) {
        return null;
      }
      Slot old = slot;
      slot = fresh;
      orphaned = false; // after the slot: a reader that sees the flag clear sees the new slot
      return old;
    }
  }

  /**
   * The orphan changed, is gone, or aged out: it is no longer valid (its old slot reads invalid).
   */
  void dropOrphan() {
    orphaned = false;
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
    return fresh() && files.isOpen();
  }

  // The orphan flag is read before the slot and again after it: the flag is set before the pool
  // clears VALID on a dead segment, and cleared after a re-validation installed the new slot, so a
  // reader racing either sees a valid slot or the flag.
  private boolean fresh() {
    if (orphaned) {
      return ticker.read() - orphanStaleAtNanos < 0;
    }
    Slot s = slot;
    if (s == null) {
      return ticker.read() - staleAtNanos < 0;
    }
    if (s.isValid()) {
      return true;
    }
    if (!orphaned) {
      // Invalid, and not known to be orphaned. A DataNode's clean shutdown clears every slot a
      // moment before the segment's connection closes (the shim's a moment after, so a reader can
      // see either first): if the DataNode no longer answers on its socket, this is that, and the
      // replica is orphaned here rather than dropped. Asked once per invalidated replica: the
      // cache retires it when the answer is no.
      DataNodeEndpoint e = endpoint;
      if (e == null || !e.orphanIfGone(this)) {
        return false;
      }
    }
    return orphaned && ticker.read() - orphanStaleAtNanos < 0;
  }

  @Override
  public void close() throws IOException {
    Slot s;
    synchronized (this) {
      closed = true;
      s = slot;
    }
    try {
      files.close();
    } finally {
      if (s != null) {
        slotPool.release(s);
      }
      if (endpoint != null) {
        endpoint.unhold(this);
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
        + (orphaned ? ", orphaned" : "")
        + "}";
  }
}
