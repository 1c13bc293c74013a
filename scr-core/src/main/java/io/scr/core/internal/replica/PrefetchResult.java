package io.scr.core.internal.replica;

/** What a prefetch on open ({@link ReplicaManager#prefetch}) did with a block. */
public enum PrefetchResult {
  /** This call opened the replica (or shared the load a reader had started) and cached it. */
  OPENED,
  /** The replica was cached already: nothing to do. */
  ALREADY_OPEN,
  /**
   * Not opened: the socket is backing off, the DataNode is known not to hold the block, the fd
   * budget or the cache is full, or the request failed (the first read decides, as without
   * prefetch).
   */
  NOT_OPENED
}
