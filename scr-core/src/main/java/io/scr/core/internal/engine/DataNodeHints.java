package io.scr.core.internal.engine;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Which local DataNode socket served a block or a file last, so that a caller that does not know
 * which DataNode holds a block ({@link Engine#leaseFromLocalDataNode}, used by the replica
 * accessor) asks the right one first when a host runs several. Every block of a file written by a
 * process on this host usually sits on one DataNode (the NameNode puts the first replica on the
 * writer's node), so the file's hint gets every block after the first right; the block's hint
 * covers a replica reopened after eviction.
 *
 * <p>A hint is only an order: a wrong or stale one costs one refused request, never a wrong read.
 * Bounded: a map that outgrows {@link #MAX_ENTRIES} is cleared (the next misses relearn).
 *
 * <p>Thread-safety: thread-safe (concurrent maps; racing updates are benign, the last wins).
 */
final class DataNodeHints {
  static final int MAX_ENTRIES = 1 << 14;

  private final ConcurrentHashMap<BlockRef, String> byBlock = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, String> byFile = new ConcurrentHashMap<>();

  /** The path that served this block, else this file, last; null if neither is known. */
  String preferred(String blockPoolId, long blockId, String fileName) {
    String p = byBlock.get(new BlockRef(blockPoolId, blockId));
    if (p == null && fileName != null) {
      p = byFile.get(fileName);
    }
    return p;
  }

  /** Records that {@code path} served the block (of {@code fileName}, if known). */
  void served(String blockPoolId, long blockId, String fileName, String path) {
    put(byBlock, new BlockRef(blockPoolId, blockId), path);
    if (fileName != null) {
      put(byFile, fileName, path);
    }
  }

  private static <K> void put(ConcurrentHashMap<K, String> map, K key, String path) {
    if (map.size() >= MAX_ENTRIES) {
      map.clear();
    }
    map.put(key, path);
  }

  private static final class BlockRef {
    final String blockPoolId;
    final long blockId;

    BlockRef(String blockPoolId, long blockId) {
      this.blockPoolId = blockPoolId;
      this.blockId = blockId;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockRef
          && ((BlockRef) o).blockId == blockId
          && ((BlockRef) o).blockPoolId.equals(blockPoolId);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(blockId) * 31 + blockPoolId.hashCode();
    }
  }
}
