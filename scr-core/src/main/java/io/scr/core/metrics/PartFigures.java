package io.scr.core.metrics;

/**
 * Where an engine reports the figures its parts keep themselves (the socket pool, mapped reads, the
 * shim extensions, reads of blocks being written, the memory of absent replicas), once per snapshot
 * ({@link EngineState#reportParts}); the rest it counts in {@link
 * io.scr.core.stats.ClientCounters}. Each method is called once per report.
 *
 * <p>Thread-safety: a sink belongs to the one snapshot being taken, on the thread taking it.
 */
public interface PartFigures {
  /** The socket pool: connects and their failures, reuses, stale-connection retries, idle now. */
  void sockets(long connects, long connectFailures, long reuses, long staleRetries, int idle);

  /**
   * Mapped reads (all zero when {@code scr.read.mapped.enabled} is off): reads, fallbacks, maps.
   */
  void mappedReads(long reads, long fallbacks, int mappings);

  /** The shim extensions: probes sent, DataNodes that speak them, failed extension requests. */
  void extensions(long probes, int peers, long failures);

  /** Reads of blocks being written: REPLICA_STATE requests, reads that went stock at the tail. */
  void tailReads(long stateRequests, long fallbacks);

  /** Replicas local DataNodes refused as absent: remembered now, requests that memory avoided. */
  void absentReplicas(long remembered, long avoided);
}
