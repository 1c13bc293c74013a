package io.scr.core.internal.replica;

import io.scr.cache.ReusableLease;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.read.LocalBlockReader;
import io.scr.core.internal.read.MappingBudget;
import io.scr.core.internal.read.ReadContext;
import io.scr.shm.Slot;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.hadoop.fs.ChecksumException;

/**
 * A {@link ReplicaLease} on a cached {@link Replica}: the cache's own lease object (a {@link
 * ReusableLease}), so leasing allocates nothing more, and, when its owner hands it back to {@link
 * ReplicaSource#lease} after closing it, nothing at all on a cache hit.
 *
 * <p>Skips verification while the slot is anchored (the DataNode has the block mlocked and verified
 * it when caching), taking and releasing the anchor around each read, as stock does.
 *
 * <p>Not thread-safe (one lease per read). {@link #close()} is idempotent; every method throws
 * {@link IllegalStateException} on a closed lease.
 */
final class LeasedReplica extends ReusableLease<Replica> implements ReplicaLease {
  private final ReplicaSource owner;
  private final LocalBlockReader reader;

  /** The read context this lease was last leased with (its thread's), or null. */
  private ReadContext readContext;

  /** The HDFS file of the current lease, for error messages; null when unknown. */
  private String fileName;

  /** The lookup key reused for each hit; created on the first reuse. */
  private ReplicaKey probe;

  LeasedReplica(ReplicaSource owner, LocalBlockReader reader) {
    this.owner = owner;
    this.reader = reader;
  }

  /** Whether {@code source} made this lease (a lease is only reused by its own engine). */
  boolean ownedBy(ReplicaSource source) {
    return owner == source;
  }

  /** Called before a lease for a read on {@code context}'s thread: its reads use its buffers. */
  void readOn(ReadContext context) {
    this.readContext = context;
  }

  /** This lease's probe, pointed at the block's replica on the DataNode at {@code socketPath}. */
  ReplicaKey probe(String blockPoolId, long blockId, String socketPath) {
    ReplicaKey p = probe;
    if (p == null) {
      p = ReplicaKey.newProbe();
      probe = p;
    }
    return p.set(blockPoolId, blockId, socketPath);
  }

  /** Called once the cache opened this lease for a read of {@code file}. */
  void opened(String file) {
    this.fileName = file;
  }

  @Override
  public String socketPath() {
    return value().socketPath();
  }

  @Override
  public long length() {
    return value().files().length();
  }

  @Override
  public int read(long blockOffset, ByteBuffer dst, boolean verifyChecksum) throws IOException {
    return read(context(), blockOffset, dst, verifyChecksum);
  }

  /**
   * Wraps {@code buf} and reads as into a buffer. A wrapper of its own, not the thread's reusable
   * one: a caller of this method (the replica accessor) may run inside a stock read that a stream
   * started with the thread's wrapper.
   */
  @Override
  public int read(long blockOffset, byte[] buf, int off, int len, boolean verifyChecksum)
      throws IOException {
    return read(context(), blockOffset, ByteBuffer.wrap(buf, off, len), verifyChecksum);
  }

  /** The read context of the calling thread: the one it was leased with, when it is this one. */
  private ReadContext context() {
    ReadContext c = readContext;
    return c != null && c.isCurrentThread() ? c : owner.readContext();
  }

  private int read(ReadContext c, long blockOffset, ByteBuffer dst, boolean verifyChecksum)
      throws IOException {
    Replica replica = value();
    Slot slot = replica.slot();
    boolean anchored = verifyChecksum && slot != null && slot.tryAnchor();
    try {
      int n =
          reader.read(replica.files(), blockOffset, dst, verifyChecksum && !anchored, fileName, c);
      if (n > 0) {
        replica.counters().recordRead(n); // two LongAdder adds against the replica's socket path
        if (replica.isOrphaned()) {
          owner.countOrphanedRead(n);
        }
      }
      return n;
    } catch (ChecksumException e) {
      replica.counters().recordChecksumFailure();
      if (replica.isOrphaned()) {
        // Nobody vouches for this replica now: it may have been appended to or truncated (new
        // generation stamp, the last checksum rewritten) just before its DataNode went. Not a
        // corruption to report; the replica is dropped and the read goes elsewhere.
        replica.dropOrphan();
        throw new IOException(
            "checksum mismatch in "
                + replica
                + ", read while its DataNode was away: the replica is dropped, not reported as"
                + " corrupt (it may have changed before the DataNode went)",
            e);
      }
      throw e;
    } finally {
      if (anchored) {
        slot.releaseAnchor();
      }
    }
  }

  /**
   * Zero-copy: a read-only buffer of {@code length} bytes of the replica at {@code blockOffset},
   * sliced from a mapping of the block file ({@link
   * io.scr.core.internal.read.ReplicaFiles#mapData}), with no checksum verified. It stays valid
   * while this lease is open: keep the lease until the buffer is no longer read, then close it.
   *
   * @param budget the budget a first mapping of this replica is charged to
   * @return the buffer, or null when the block file cannot be mapped (the caller copies instead)
   * @throws java.io.EOFException if the block file was truncated under the replica
   */
  ByteBuffer mapped(long blockOffset, int length, MappingBudget budget) throws IOException {
    Replica replica = value();
    ByteBuffer view = replica.files().mapData(blockOffset, length, budget);
    if (view != null) {
      replica.counters().recordRead(length);
    }
    return view;
  }

  @Override
  public boolean tryAnchor() {
    Slot slot = value().slot();
    return slot != null && slot.tryAnchor();
  }

  @Override
  public void releaseAnchor() {
    Slot slot = value().slot();
    if (slot == null) {
      throw new IllegalStateException("a replica without a slot is never anchored: " + this);
    }
    slot.releaseAnchor();
  }

  @Override
  public String toString() {
    return isOpen() ? "ReplicaLease{" + value() + "}" : "ReplicaLease{closed}";
  }
}
