package io.scr.core.replica;

/**
 * Cache key of a replica: block pool id and block id (not the generation stamp, which the replica
 * records and the lease checks, so an appended or recovered block replaces its old entry).
 * Immutable.
 */
public final class ReplicaKey {
  private final String blockPoolId;
  private final long blockId;

  /** The key of block {@code blockId} in pool {@code blockPoolId}. */
  public ReplicaKey(String blockPoolId, long blockId) {
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
  }

  /** The block pool id. */
  public String blockPoolId() {
    return blockPoolId;
  }

  /** The block id. */
  public long blockId() {
    return blockId;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ReplicaKey)) {
      return false;
    }
    ReplicaKey other = (ReplicaKey) o;
    return blockId == other.blockId && blockPoolId.equals(other.blockPoolId);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(blockId) * 31 + blockPoolId.hashCode();
  }

  @Override
  public String toString() {
    return blockPoolId + ":blk_" + blockId;
  }
}
