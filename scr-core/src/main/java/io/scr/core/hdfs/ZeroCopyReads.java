package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.read.MappingBudget;
import io.scr.core.internal.replica.ReplicaSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.io.ByteBufferPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The zero-copy side of one {@link ScrInputStream}: lends read-only slices of block-file mappings,
 * each holding a lease on its replica (and the anchor, when it took one) until {@link #release},
 * remembers the buffers a copying fallback filled and the pool they go back to, and counts both
 * ways. The stream chooses the block and leases; this class decides whether the lease can lend a
 * mapping.
 *
 * <p>Thread-safety: thread-safe; the two maps are guarded by this object's monitor, taken after the
 * stream's (the stream calls in holding its own, as stock's zero-copy reads do). Counters are
 * {@link LongAdder}s.
 */
final class ZeroCopyReads {
  private static final Logger LOG = LoggerFactory.getLogger(ScrInputStream.class);

  /** Why a zero-copy read at a local block copied instead; indexes {@link #LOGGED}. */
  enum NoZeroCopy {
    CHECKSUMS("checksums are verified and the DataNode has not cached the block (no anchor)"),
    NOT_MAPPED("the block file could not be mapped (mapping budget full, unavailable or failed)"),
    FAILED("the replica could not be leased or its block file was truncated"),
    DISABLED(HdfsClientConfigKeys.Mmap.ENABLED_KEY + " is false");

    final String why;

    NoZeroCopy(String why) {
      this.why = why;
    }
  }

  /** The first zero-copy fallback of each {@link NoZeroCopy} kind in the process is logged. */
  private static final AtomicBoolean[] LOGGED = {
    new AtomicBoolean(), new AtomicBoolean(), new AtomicBoolean(), new AtomicBoolean()
  };

  private final String src;
  private final MappingBudget mappingBudget;
  private final LongAdder reads = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();

  /** Zero-copy buffers lent out and not released yet, each with the lease that keeps it valid. */
  @GuardedBy("this")
  private final Map<ByteBuffer, Loan> lent = new IdentityHashMap<>();

  /** Buffers a zero-copy fallback filled, with the pool they go back to. */
  @GuardedBy("this")
  private final Map<ByteBuffer, ByteBufferPool> copied = new IdentityHashMap<>();

  ZeroCopyReads(String src, MappingBudget mappingBudget) {
    this.src = src;
    this.mappingBudget = mappingBudget;
  }

  /**
   * Lends a slice of {@code lease}'s block-file mapping from {@code blockOffset}, at most {@code
   * maxLength} bytes and never past {@code blockRemaining} nor the replica's length; or null (the
   * reason counted) when it cannot. Takes the lease over: it is kept with the buffer, or given back
   * before this returns (also when it throws).
   *
   * @param skipChecksums whether the read may skip verification; otherwise only an anchored replica
   *     (cached and verified by the DataNode) lends a mapping
   * @throws IOException if the block file was truncated under the replica
   */
  synchronized ByteBuffer lend(
      ReplicaLease lease,
      long blockOffset,
      int maxLength,
      long blockRemaining,
      boolean skipChecksums)
      throws IOException {
    boolean anchored = false;
    ByteBuffer view = null;
    try {
      if (!skipChecksums) {
        anchored = lease.tryAnchor();
        if (!anchored) {
          return fallback(NoZeroCopy.CHECKSUMS);
        }
      }
      long length = Math.min(maxLength, Math.min(blockRemaining, lease.length() - blockOffset));
      if (length <= 0) {
        return fallback(NoZeroCopy.FAILED); // the replica is shorter than the NameNode says
      }
      view = ReplicaSource.mapped(lease, blockOffset, (int) length, mappingBudget);
      if (view == null) {
        return fallback(NoZeroCopy.NOT_MAPPED);
      }
      lent.put(view, new Loan(lease, anchored));
      reads.increment();
      return view;
    } finally {
      if (view == null) {
        new Loan(lease, anchored).release();
      }
    }
  }

  /** Counts a zero-copy read that copies instead, logging the first of each kind; null. */
  ByteBuffer fallback(NoZeroCopy why) {
    fallbacks.increment();
    if (!LOGGED[why.ordinal()].getAndSet(true)) {
      LOG.info(
          "A zero-copy read of {} copies instead: {} (logged once per process; counted in the"
              + " stream's zero-copy fallbacks)",
          src,
          why.why);
    }
    return null;
  }

  /** Remembers a buffer the copying fallback filled from {@code pool}. */
  synchronized void copied(ByteBuffer buffer, ByteBufferPool pool) {
    copied.put(buffer, pool);
  }

  /**
   * Gives back a buffer this stream lent (its lease) or filled (to its pool); false when it is
   * neither.
   */
  synchronized boolean release(ByteBuffer buffer) {
    Loan loan = lent.remove(buffer);
    if (loan != null) {
      loan.release();
      return true;
    }
    ByteBufferPool pool = copied.remove(buffer);
    if (pool != null) {
      pool.putBuffer(buffer);
      return true;
    }
    return false;
  }

  /** At the stream's close: gives back the leases of buffers never released, with a warning. */
  synchronized void releaseAll() {
    if (!lent.isEmpty()) {
      LOG.warn(
          "closing {} with {} zero-copy buffers never released; releasing their replicas now"
              + " (a buffer read after its replica closes reads zeros): release every buffer"
              + " read(ByteBufferPool, int, EnumSet) returns with releaseBuffer",
          src,
          lent.size());
      for (Loan loan : lent.values()) {
        loan.release();
      }
      lent.clear();
    }
    copied.clear(); // as stock: a copy the caller kept is simply not returned to its pool
  }

  long reads() {
    return reads.sum();
  }

  long fallbacks() {
    return fallbacks.sum();
  }

  synchronized int outstanding() {
    return lent.size();
  }

  /** A zero-copy buffer's hold on its replica: the lease and whether it took an anchor. */
  private static final class Loan {
    final ReplicaLease lease;
    final boolean anchored;

    Loan(ReplicaLease lease, boolean anchored) {
      this.lease = lease;
      this.anchored = anchored;
    }

    void release() {
      try {
        if (anchored) {
          lease.releaseAnchor();
        }
      } finally {
        lease.close();
      }
    }
  }
}
