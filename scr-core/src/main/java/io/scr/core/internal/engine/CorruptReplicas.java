package io.scr.core.internal.engine;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;

/**
 * Replicas that failed a checksum through the replica accessor, by (block, generation stamp,
 * DataNode socket): the accessor cannot report them to the NameNode against the right DataNode, so
 * the engine stops serving them and stock's retry reads another replica. At most {@value #MAX}
 * entries; full, it starts over.
 *
 * <p>Thread-safety: a concurrent set; a clear racing an add may drop that add (benign: the replica
 * is invalidated in the cache anyway, and a second checksum failure adds it again).
 */
final class CorruptReplicas {
  /** Most replicas remembered. */
  static final int MAX = 4096;

  private final Set<String> known = ConcurrentHashMap.newKeySet();

  void add(ExtendedBlock block, String socketPath) {
    if (known.size() >= MAX) {
      known.clear();
    }
    known.add(key(block, socketPath));
  }

  boolean isEmpty() {
    return known.isEmpty();
  }

  boolean contains(ExtendedBlock block, String socketPath) {
    return !known.isEmpty() && known.contains(key(block, socketPath));
  }

  private static String key(ExtendedBlock block, String socketPath) {
    return block.getBlockPoolId()
        + ":"
        + block.getBlockId()
        + "_"
        + block.getGenerationStamp()
        + "@"
        + socketPath;
  }
}
