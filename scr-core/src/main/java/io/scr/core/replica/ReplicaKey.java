package io.scr.core.replica;

/**
 * Cache key of a replica: block pool id and block id (not the generation stamp, which the replica
 * records and the lease checks, so an appended or recovered block replaces its old entry).
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

  /** The key of block {@code blockId} in pool {@code blockPoolId}. */
  public ReplicaKey(String blockPoolId, long blockId) {
    if (blockPoolId == null) {
      throw new NullPointerException("blockPoolId");
    }
    this.probe = false;
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
  }

  private ReplicaKey() {
    this.probe = true;
    this.blockPoolId = "";
  }

  /** A mutable lookup key, for one thread at a time. */
  static ReplicaKey newProbe() {
    return new ReplicaKey();
  }

  /** Re-points this probe; returns it. */
  ReplicaKey set(String blockPoolId, long blockId) {
    if (!probe) {
      throw new IllegalStateException("only a probe key may change: " + this);
    }
    this.blockPoolId = blockPoolId;
    this.blockId = blockId;
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
