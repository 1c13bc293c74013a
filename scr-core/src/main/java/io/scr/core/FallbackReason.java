package io.scr.core;

/**
 * Why {@link ScrClient#socketPathFor} or {@link ScrClient#lease} returned null and the read went
 * the stock way. Counted per reason ({@link ScrClient#fallbackCount}).
 */
public enum FallbackReason {
  /** {@code scr.client.enabled} is false. */
  DISABLED,
  /**
   * No socket path is configured ({@code scr.client.socket.paths}, {@code dfs.domain.socket.path}).
   */
  NOT_CONFIGURED,
  /** The DataNode is not on this host. */
  NOT_LOCAL,
  /** The socket path is backing off after a failure (see the backoff status for the reason). */
  BACKING_OFF,
  /** Connecting to the socket failed (the path now backs off). */
  CONNECT_FAILED,
  /** The DataNode does not pass fds (the path now backs off). */
  UNSUPPORTED,
  /** An I/O or protocol failure (the path now backs off). */
  IO_ERROR,
  /**
   * The DataNode cannot serve this block locally (unknown block, stale generation stamp), or said
   * so recently and is not asked again ({@code io.scr.core.internal.replica.AbsentReplicas}).
   */
  BLOCK_REFUSED,
  /** The engine has been closed. */
  CLOSED,
  /** The open-replica cache could not fit another replica within its fd budget. */
  FD_BUDGET,
  /**
   * The local DataNode did not answer the replica open within its health deadline ({@code
   * scr.client.health.deadline.*}): it is now suspect or unresponsive.
   */
  DATANODE_TIMEOUT,
  /**
   * The local DataNode is suspect, unresponsive or dead ({@code io.scr.core.internal.health}), so
   * the replica was not asked for there; replicas already open keep reading short-circuit.
   */
  DATANODE_UNHEALTHY
}
