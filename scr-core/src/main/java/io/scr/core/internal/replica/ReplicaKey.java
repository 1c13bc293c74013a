package io.scr.core.internal.replica;

/**
 * Cache key of a replica: block pool id, block id and the socket path of the DataNode it was opened
 * through (not the generation stamp, which the replica records and the lease checks, so an appended
 * or recovered block replaces its old entry). With several DataNodes on one host each may hold a
 * replica of the same block; they are different files (one may be corrupt, the other good), so a
 * lease asked of DataNode Y never gets DataNode X's replica, and a replica's error is reported
 * against the DataNode that served it.
 *
 * <p>Keys made with the public constructor are immutable and are what the cache stores. A lease
 * that is reused also keeps a <em>probe</em> ({@link #newProbe()}): a key it re-points at each
 * block it looks up, so a cache hit allocates no key. Probes are only ever looked up ({@code
 * LeaseCache.leaseIfPresent}), never stored, and are confined to their lease's thread.
 */
public final class ReplicaKey {
  private final boolean probe;
  private String blockPoolId;
  private long blockId;
  private String socketPath;

  /**
   * The key of block {@code blockId} in pool {@code blockPoolId} as served by the DataNode at
   * {@code socketPath}.
   */
  public ReplicaKey(String blockPoolId, long blockId, String socketPath) {
    if (blockPoolId == null || socketPath == null) {
      throw new NullPointerException("blockPoolId and socketPath are required");
    }
    this.probe = false;
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
    this.socketPath = socketPath;
  }

  private ReplicaKey() {
    this.probe = true;
    this.blockPoolId = "";
    this.socketPath = "";
  }

  /** A mutable lookup key, for one thread at a time. */
  static ReplicaKey newProbe() {
    return new ReplicaKey();
  }

  /** Re-points this probe; returns it. */
  ReplicaKey set(String blockPoolId, long blockId, String socketPath) {
    if (!probe) {
      throw new IllegalStateException("only a probe key may change: " + this);
    }
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
    this.socketPath = socketPath;
    return this;
  }

  /** Whether this is a probe (never to be stored). */
  boolean isProbe() {
    return probe;
  }

  /** The block pool id. */
  public String blockPoolId() {
    return blockPoolId;
  }

  /** The block id. */
  public long blockId() {
    return blockId;
  }

  /** The socket path of the DataNode the replica is (to be) opened through. */
  public String socketPath() {
    return socketPath;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ReplicaKey)) {
      return false;
    }
    ReplicaKey other = (ReplicaKey) o;
    return blockId == other.blockId
        && blockPoolId.equals(other.blockPoolId)
        && socketPath.equals(other.socketPath);
  }

  @Override
  public int hashCode() {
    // String caches its hash: no per-lookup cost beyond the multiply-adds.
    return (Long.hashCode(blockId) * 31 + blockPoolId.hashCode()) * 31 + socketPath.hashCode();
  }

  @Override
  public String toString() {
    return blockPoolId + ":blk_" + blockId + "@" + socketPath;
  }
}
