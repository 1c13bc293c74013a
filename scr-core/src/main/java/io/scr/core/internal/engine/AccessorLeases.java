package io.scr.core.internal.engine;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.replica.AbsentReplicas;
import io.scr.core.internal.replica.ReplicaKey;
import io.scr.core.internal.replica.ReplicaManager;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * Leases for callers that know the block but not the DataNode (the replica accessor: stock builds
 * it from the block alone): a replica the engine has open from any DataNode, else the local
 * DataNodes asked in turn, the one that last served the block or file first ({@link
 * DataNodeHints}), none asked twice for a block it said it does not hold ({@link AbsentReplicas}),
 * and none serving a replica that failed a checksum here ({@link CorruptReplicas}).
 *
 * <p>Concurrency: thread-safe; the hints and the corrupt set are concurrent structures, the
 * misdirected count a {@link LongAdder}.
 */
final class AccessorLeases {
  private final ReplicaManager replicas;
  private final LocalSockets sockets;
  private final FallbackCounters fallbacks;
  private final CorruptReplicas corrupt = new CorruptReplicas();
  private final DataNodeHints hints = new DataNodeHints();
  private final LongAdder misdirected = new LongAdder();

  AccessorLeases(ReplicaManager replicas, LocalSockets sockets, FallbackCounters fallbacks) {
    this.replicas = replicas;
    this.sockets = sockets;
    this.fallbacks = fallbacks;
  }

  /** See {@link Engine#leaseIfCached}. */
  ReplicaLease leaseIfCached(ExtendedBlock block, String fileName) {
    return notKnownCorrupt(block, replicas.leaseIfCached(block, fileName));
  }

  /** See {@link Engine#replicaFailedChecksum}. */
  void replicaFailedChecksum(ExtendedBlock block, String socketPath) {
    corrupt.add(block, socketPath);
    replicas.invalidate(new ReplicaKey(block.getBlockPoolId(), block.getBlockId(), socketPath));
  }

  /** {@code lease}, or null (the lease closed) when it is a replica known to be corrupt. */
  private ReplicaLease notKnownCorrupt(ExtendedBlock block, ReplicaLease lease) {
    if (lease != null && corrupt.contains(block, lease.socketPath())) {
      lease.close();
      return null;
    }
    return lease;
  }

  /** See {@link Engine#leaseFromLocalDataNode}. */
  ReplicaLease leaseFromLocalDataNode(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String fileName) throws IOException {
    ReplicaLease cached = leaseIfCached(block, fileName);
    if (cached != null) {
      return cached;
    }
    List<String> paths = sockets.localSocketPathsRecently();
    if (!corrupt.isEmpty()) {
      paths.removeIf(p -> corrupt.contains(block, p));
    }
    if (paths.isEmpty()) {
      return fallback(FallbackReason.NOT_CONFIGURED);
    }
    // A DataNode that said it has no such replica is not asked again (within the memory's
    // expiry): a block held only by a remote DataNode then costs the stock path and nothing more.
    AbsentReplicas absent = replicas.absentReplicas();
    paths.removeIf(p -> absent.isAbsent(block, p));
    if (paths.isEmpty()) {
      return fallback(FallbackReason.BLOCK_REFUSED);
    }
    String bpid = block.getBlockPoolId();
    long id = block.getBlockId();
    String preferred = hints.preferred(bpid, id, fileName);
    if (preferred != null && paths.size() > 1 && paths.remove(preferred)) {
      paths.add(0, preferred);
    }
    FallbackReason[] last = new FallbackReason[1];
    boolean refused = false;
    for (int i = 0; i < paths.size(); i++) {
      String path = paths.get(i);
      last[0] = null;
      ReplicaLease lease =
          replicas.source().lease(block, token, path, fileName, null, r -> last[0] = r);
      if (lease != null) {
        if (paths.size() > 1) {
          hints.served(bpid, id, fileName, path);
        }
        return lease;
      }
      if (last[0] == FallbackReason.BLOCK_REFUSED) {
        refused = true;
        if (i < paths.size() - 1) {
          misdirected.increment();
        }
      }
    }
    if (refused || last[0] == null) {
      return fallback(FallbackReason.BLOCK_REFUSED);
    }
    return fallback(last[0]);
  }

  /** See {@link Engine#misdirectedRequestCount}. */
  long misdirectedRequestCount() {
    return misdirected.sum();
  }

  private ReplicaLease fallback(FallbackReason reason) {
    fallbacks.accept(reason);
    return null;
  }
}
