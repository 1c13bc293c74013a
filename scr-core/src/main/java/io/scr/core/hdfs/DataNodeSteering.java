package io.scr.core.hdfs;

import io.scr.core.internal.engine.Engine;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * Steers one stream's stock choice of a DataNode away from local DataNodes that are not healthy
 * ({@link io.scr.core.internal.health.DataNodeHealth}) while another location is usable: a first
 * read of a block whose local DataNode hangs reads a remote replica at once instead of waiting for
 * stock's socket timeout on the hung one. Asked on every choice, so nothing is remembered: the next
 * stock read after the DataNode answers again may choose it (no dead-node entry to age out). A
 * block whose only usable location is the unhealthy one is left to stock, which waits as it always
 * does.
 *
 * <p>Thread-safety: thread-safe (the stream's stock reads choose concurrently); its only state is a
 * counter.
 */
final class DataNodeSteering {
  private final Engine scr;

  /**
   * Whether stock's choice skips a DataNode already (the stream's and the detector's dead nodes).
   */
  private final Predicate<DatanodeInfo> deadForStock;

  private final LongAdder steered = new LongAdder();

  DataNodeSteering(Engine scr, Predicate<DatanodeInfo> deadForStock) {
    this.scr = scr;
    this.deadForStock = deadForStock;
  }

  /**
   * The DataNodes a stock read of {@code block} must not choose: {@code ignoredNodes} (may be null)
   * plus, when another location is usable, the local DataNodes that are not healthy; a new
   * collection then, never the caller's changed.
   */
  Collection<DatanodeInfo> nodesToSkip(LocatedBlock block, Collection<DatanodeInfo> ignoredNodes) {
    DatanodeInfo[] locations = block.getLocations();
    if (locations == null || locations.length < 2) {
      return ignoredNodes;
    }
    List<DatanodeInfo> unhealthy = null;
    boolean otherUsable = false;
    for (DatanodeInfo dn : locations) {
      if ((ignoredNodes != null && ignoredNodes.contains(dn)) || deadForStock.test(dn)) {
        continue;
      }
      String path = scr.socketPathOf(dn);
      if (path != null && scr.isDataNodeUnwell(path)) {
        if (unhealthy == null) {
          unhealthy = new ArrayList<>(1);
        }
        unhealthy.add(dn);
      } else {
        otherUsable = true;
      }
    }
    if (unhealthy == null || !otherUsable) {
      return ignoredNodes;
    }
    steered.increment();
    if (ignoredNodes != null) {
      unhealthy.addAll(ignoredNodes);
    }
    return unhealthy;
  }

  /** Stock reads steered off an unhealthy local DataNode to another replica. */
  long steeredReads() {
    return steered.sum();
  }
}
