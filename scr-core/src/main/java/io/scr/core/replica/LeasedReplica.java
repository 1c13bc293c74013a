package io.scr.core.replica;

import io.scr.cache.Lease;
import io.scr.core.ReplicaLease;
import io.scr.core.read.LocalBlockReader;
import io.scr.shm.Slot;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.hadoop.fs.ChecksumException;

/**
 * A {@link ReplicaLease} on a cached {@link Replica}. Skips verification while the slot is anchored
 * (the DataNode has the block mlocked and verified it when caching), taking and releasing the
 * anchor around each read, as stock does. Not thread-safe (one lease per read).
 */
final class LeasedReplica implements ReplicaLease {
  private final Lease<Replica> lease;
  private final Replica replica;
  private final LocalBlockReader reader;
  private final String fileName;
  private boolean closed;

  LeasedReplica(Lease<Replica> lease, LocalBlockReader reader, String fileName) {
    this.lease = lease;
    this.replica = lease.value();
    this.reader = reader;
    this.fileName = fileName;
  }

  Replica replica() {
    return replica;
  }

  @Override
  public long length() {
    return replica.files().length();
  }

  @Override
  public int read(long blockOffset, ByteBuffer dst, boolean verifyChecksum) throws IOException {
    checkOpen();
    Slot slot = replica.slot();
    boolean anchored = verifyChecksum && slot != null && slot.tryAnchor();
    try {
      return counted(
          replica,
          reader.read(replica.files(), blockOffset, dst, verifyChecksum && !anchored, fileName));
    } catch (ChecksumException e) {
      replica.counters().recordChecksumFailure();
      throw e;
    } finally {
      if (anchored) {
        slot.releaseAnchor();
      }
    }
  }

  @Override
  public int read(long blockOffset, byte[] buf, int off, int len, boolean verifyChecksum)
      throws IOException {
    checkOpen();
    Slot slot = replica.slot();
    boolean anchored = verifyChecksum && slot != null && slot.tryAnchor();
    try {
      return counted(
          replica,
          reader.read(
              replica.files(), blockOffset, buf, off, len, verifyChecksum && !anchored, fileName));
    } catch (ChecksumException e) {
      replica.counters().recordChecksumFailure();
      throw e;
    } finally {
      if (anchored) {
        slot.releaseAnchor();
      }
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("lease on " + replica + " is closed");
    }
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      lease.close();
    }
  }

  /** Counts a read that returned data against the replica's socket path (two LongAdder adds). */
  private static int counted(Replica replica, int n) {
    if (n > 0) {
      replica.counters().recordRead(n);
    }
    return n;
  }

  @Override
  public String toString() {
    return "ReplicaLease{" + replica + (closed ? ", closed}" : "}");
  }
}
