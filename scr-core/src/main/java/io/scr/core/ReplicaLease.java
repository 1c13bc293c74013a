package io.scr.core;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A leased open replica, from {@link ScrClient#lease}. While the lease is open the replica's fds
 * stay open; {@link #close()} gives the lease back to the engine's cache (it never closes fds
 * directly; the cache does, off the read path, once nobody holds the replica).
 *
 * <p>Not thread-safe: take one lease per read (or per reading thread). {@link #close()} is
 * idempotent. Every method but {@link #close()} throws {@link IllegalStateException} on a closed
 * lease.
 *
 * <p><b>Reuse.</b> Its owner may pass a closed lease back to {@link ScrClient#lease(
 * org.apache.hadoop.hdfs.protocol.ExtendedBlock, org.apache.hadoop.security.token.Token, String,
 * String, ReplicaLease)}, which reopens the same object for the next read, so the read path
 * allocates nothing. Only the owner reopens a lease, and only once nothing else refers to it.
 */
public interface ReplicaLease extends Closeable {
  /**
   * The socket path of the DataNode whose replica this is (the one that passed its fds): with
   * several DataNodes on one host, the one to name when reporting the replica corrupt. {@link
   * ScrClient#socketPathFor} maps a {@code DatanodeInfo} to the same string.
   */
  String socketPath();

  /** Bytes in the replica when it was opened. */
  long length();

  /**
   * Positional read at {@code blockOffset} into {@code dst} (heap or direct), at most {@code
   * dst.remaining()} bytes; advances {@code dst}'s position by the count returned.
   *
   * @param verifyChecksum verify the covering checksum chunks (skipped anyway when the DataNode has
   *     the block cached and the slot can be anchored)
   * @return bytes read (possibly fewer than requested; call again), or -1 at or past {@link
   *     #length()}
   * @throws org.apache.hadoop.fs.ChecksumException naming file or block, block and offset
   */
  int read(long blockOffset, ByteBuffer dst, boolean verifyChecksum) throws IOException;

  /** As {@link #read(long, ByteBuffer, boolean)}, into {@code buf[off, off + len)}. */
  int read(long blockOffset, byte[] buf, int off, int len, boolean verifyChecksum)
      throws IOException;

  /**
   * Anchors the replica for a read without checksums, as stock does: succeeds only while the
   * DataNode holds the block cached (mlocked and verified; the slot is ANCHORABLE), and keeps the
   * DataNode from uncaching it until {@link #releaseAnchor()}. False without a slot.
   */
  boolean tryAnchor();

  /** Releases an anchor {@link #tryAnchor()} took; call it before {@link #close()}. */
  void releaseAnchor();

  /** Releases the lease; idempotent. */
  @Override
  void close();
}
