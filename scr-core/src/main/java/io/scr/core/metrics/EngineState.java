package io.scr.core.metrics;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.FallbackReason;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.HealthStatus;
import io.scr.shm.SlotPoolStats;
import java.util.List;

/**
 * What the metrics read from an engine besides its counters and socket pool: the engine implements
 * it, so this package does not depend on the engine's class.
 *
 * <p>Thread-safety: every method must be safe to call from any thread at any time (the metrics
 * system polls from its own thread), and must not take a lock a reader waits on.
 */
public interface EngineState {
  /** The client context the engine is shared under. */
  String context();

  /** How often reads fell back for {@code reason}. */
  long fallbackCount(FallbackReason reason);

  /** The open-replica cache's counters. */
  LeaseCacheStats cacheStats();

  /** The slot pools' counters. */
  List<SlotPoolStats> slotPoolStats();

  /** Per-path, per-failure-class backoff counters. */
  List<BackoffStatus> backoffStatus();

  /** Reports the figures the engine's parts keep themselves to {@code out}. */
  void reportParts(PartFigures out);

  /** Open replicas read now although their DataNode went away (orphaned). */
  int orphanedReplicas();

  /** The health of the DataNode sockets the engine asked for replicas (process-wide state). */
  default List<HealthStatus> healthStatus() {
    return java.util.Collections.emptyList();
  }
}
