package io.scr.core.hdfs;

import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.read.TailSnapshot;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.net.SocketTimeoutException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * How a {@link ScrInputStream} learns the visible length of its block being written from the local
 * DataNode, where stock asks a DataNode over TCP ({@code ClientDatanodeProtocol
 * .getReplicaVisibleLength}, from {@code DFSInputStream.openInfo}) on every open of a file being
 * written.
 *
 * <ul>
 *   <li><b>A DataNode with the scr shim</b> (it offers {@code replica-state}): its memory, by one
 *       REPLICA_STATE exchange over the pooled UNIX socket (no fds, no TCP). The answer is the
 *       replica's {@code bytesAcked}, the length stock's RPC returns; it is used only for the
 *       generation stamp the reader knows.
 *   <li><b>A stock DataNode</b>: its only answer is that RPC, asked of the local DataNode over a
 *       connection kept between calls ({@link VisibleLengthRpc}; stock opens and authenticates a
 *       new one per call), on open and at the end of a stream, where it replaces a whole reopen (a
 *       NameNode call, a new stream and the RPC); the bytes it makes visible are read
 *       short-circuit. A call that waits its whole bound makes the DataNode suspect (its health).
 * </ul>
 *
 * <p><b>Around a local DataNode that is not well.</b> Stock asks the locations in the NameNode's
 * order, the local DataNode first, each with the client's socket timeout: every open of a file
 * being written waits that timeout on a hung local DataNode. When a local location is unwell (known
 * before the open, or from this open's call timing out), the other locations are asked here, in
 * that order, by the same RPC over kept connections ({@link #aroundUnwell}); only when none answers
 * does stock measure, as before. Otherwise a failed answer leaves the measuring to stock, which
 * tries every location.
 *
 * <p>Never a byte past the visible length a DataNode reports: the length comes from the DataNode's
 * {@code bytesAcked}, not from the block file's size (which can be ahead of it, or behind).
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class LocalVisibleLength {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(LocalVisibleLength.class);

  private LocalVisibleLength() {}

  /**
   * The socket path of a location of {@code lb} on this host that is configured, healthy and not
   * backing off; null when none (the stream measures the stock way).
   */
  static String localPath(Engine scr, LocatedBlock lb) {
    for (DatanodeInfo dn : lb.getLocations()) {
      String path = scr.unreachableReason(dn) == null ? scr.socketPathOf(dn) : null;
      if (path != null && !scr.isDataNodeUnwell(path) && !scr.isBackingOff(path)) {
        return path;
      }
    }
    return null;
  }

  /** The location of {@code lb} whose socket path is {@code path}, or null. */
  static DatanodeInfo dataNodeAt(Engine scr, LocatedBlock lb, String path) {
    for (DatanodeInfo dn : lb.getLocations()) {
      if (path.equals(scr.socketPathOf(dn))) {
        return dn;
      }
    }
    return null;
  }

  /**
   * The visible length of the block being written of {@code blocks}, from the local DataNode (its
   * memory with the scr shim, else its RPC over a kept connection), for a stream about to open; -1
   * when the last block is complete, has no healthy local location, or its DataNode could not
   * answer for this generation stamp: the stream then measures the stock way.
   */
  static long onOpen(Engine scr, VisibleLengthRpc rpc, LocatedBlocks blocks) throws IOException {
    LocatedBlock last = blocks.isLastBlockComplete() ? null : blocks.getLastLocatedBlock();
    if (last == null || last.getLocations().length == 0 || last.isCorrupt() || last.isStriped()) {
      return -1;
    }
    String path = localPath(scr, last);
    if (path != null) {
      long visible =
          scr.extensions().features(path).replicaState()
              ? fromMemory(scr, last, path)
              : fromRpc(scr, rpc, last, path);
      if (visible >= 0) {
        return visible;
      }
    }
    return aroundUnwell(scr, rpc, last);
  }

  /**
   * The visible length of {@code lb}'s replica from its first location, in the NameNode's order,
   * that answers the RPC, skipping local DataNodes that are unwell; -1 when no local location is
   * unwell (stock's order costs nothing then) or none of the others answers.
   *
   * @throws java.io.InterruptedIOException on the calling thread's own interrupt
   */
  static long aroundUnwell(Engine scr, VisibleLengthRpc rpc, LocatedBlock lb) throws IOException {
    DatanodeInfo[] locations = lb.getLocations();
    boolean skipped = false;
    for (DatanodeInfo dn : locations) {
      String path = scr.socketPathOf(dn);
      skipped |= path != null && scr.isDataNodeUnwell(path);
    }
    if (!skipped) {
      return -1;
    }
    for (DatanodeInfo dn : locations) {
      String path = scr.socketPathOf(dn);
      if (path != null && scr.isDataNodeUnwell(path)) {
        continue;
      }
      long visible = fromRpc(rpc, lb, dn, scr, null);
      if (visible >= 0) {
        LOG.debug(
            "{}: visible length {} from {}, around an unwell local DataNode", lb, visible, dn);
        return visible;
      }
    }
    return -1;
  }

  /**
   * The visible length of {@code lb}'s replica on the local DataNode at {@code path}, by its RPC
   * over the connection {@code rpc} keeps; -1 when the call failed. A call that waited its whole
   * bound makes that DataNode suspect ({@link
   * io.scr.core.internal.health.DataNodeHealth#timedOut}), so the next opens go around it at once.
   *
   * @throws java.io.InterruptedIOException on the calling thread's own interrupt
   */
  static long fromRpc(Engine scr, VisibleLengthRpc rpc, LocatedBlock lb, String path)
      throws IOException {
    return fromRpc(rpc, lb, dataNodeAt(scr, lb, path), scr, path);
  }

  /**
   * The visible length of {@code lb}'s replica on {@code dn}, by its RPC over the connection {@code
   * rpc} keeps; -1 when {@code dn} is null or the call failed (the caller asks elsewhere or the
   * stock way). A timeout is reported to the health of {@code path} when it is not null.
   */
  private static long fromRpc(
      VisibleLengthRpc rpc, LocatedBlock lb, DatanodeInfo dn, Engine scr, String path)
      throws IOException {
    if (dn == null) {
      return -1;
    }
    try {
      long visible = rpc.visibleLength(lb, dn);
      return visible >= 0 ? visible : -1;
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      if (path != null && isTimeout(e)) {
        scr.dataNodeHealth()
            .timedOut(path, "getReplicaVisibleLength unanswered: " + e.getMessage());
      }
      LOG.debug("{}: no visible length from {}: {}", lb.getBlock(), dn, e.toString());
      return -1;
    }
  }

  private static boolean isTimeout(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SocketTimeoutException) {
        return true;
      }
    }
    return false;
  }

  /**
   * The visible length of {@code lb}'s replica at {@code path}, from that DataNode's memory
   * (REPLICA_STATE); -1 when it does not offer the request, refused it, or holds the replica under
   * another generation stamp (recovered or appended: the reader reopens, as with stock).
   */
  static long fromMemory(Engine scr, LocatedBlock lb, String path) throws IOException {
    TailSnapshot state =
        scr.replicaSource().tailReads().replicaState(lb.getBlock(), lb.getBlockToken(), path);
    if (state == null || state.generationStamp() != lb.getBlock().getGenerationStamp()) {
      return -1;
    }
    return state.visibleLength() >= 0 ? state.visibleLength() : -1;
  }
}
