package io.scr.core.metrics;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.FallbackReason;
import io.scr.core.internal.health.PathHealth;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.read.MappedReads;
import io.scr.core.internal.replica.AbsentReplicas;
import io.scr.core.internal.replica.TailReads;
import io.scr.shm.SlotPoolStats;
import java.util.List;

/**
 * What the metrics read from an engine besides its counters and socket pool: the engine ({@code
 * ScrClient}) implements it, so this package does not depend on the engine's class.
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
  List<PathBackoff.Status> backoffStatus();

  /** The mapped-read policy and its counters, or null when mapped reads are off. */
  MappedReads mappedReads();

  /** Which DataNodes speak the scr shim's extensions. */
  PeerExtensions extensions();

  /** Reads of blocks being written: their REPLICA_STATE requests and tail fallbacks. */
  TailReads tailReads();

  /** The memory of replicas local DataNodes refused as absent. */
  AbsentReplicas absentReplicas();

  /** Open replicas read now although their DataNode went away (orphaned). */
  int orphanedReplicas();

  /** The health of the DataNode sockets the engine asked for replicas (process-wide state). */
  default List<PathHealth.Status> healthStatus() {
    return java.util.Collections.emptyList();
  }
}
