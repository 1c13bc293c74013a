package io.scr.core.stats;

/**
 * Why a DataNode socket path failed, grouped by how long to leave it alone. Each class has its own
 * backoff duration ({@code scr.backoff.*.seconds}); consecutive failures of one class double it up
 * to {@code scr.backoff.max.seconds}.
 */
public enum FailureClass {
  /** Could not connect: no socket file, nobody listening, permission denied, connect timeout. */
  CONNECT(true),
  /** The DataNode said it does not pass fds (ERROR_UNSUPPORTED without a version). */
  UNSUPPORTED(true),
  /** I/O or protocol failure on a fresh connection: reset, timeout, malformed reply, no fds. */
  IO(true),
  /**
   * The shared-memory request failed or was refused. Only slot use backs off (reads go on without
   * slots, with time-based staleness); the path stays usable for fds.
   */
  SHM(false);

  private final boolean disablesPath;

  FailureClass(boolean disablesPath) {
    this.disablesPath = disablesPath;
  }

  /** Whether a backoff of this class keeps reads off the path (false: only slots are affected). */
  public boolean disablesPath() {
    return disablesPath;
  }
}
