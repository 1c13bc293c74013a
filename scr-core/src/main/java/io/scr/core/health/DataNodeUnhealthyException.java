package io.scr.core.health;

import java.io.IOException;

/**
 * A replica open was not attempted because the DataNode at its socket is not healthy: the read goes
 * the stock way (another replica) until a probe or a request is answered again. Carries no stack
 * trace (it is a decision, not a failure, and may be thrown on every first read while a DataNode
 * hangs).
 */
public final class DataNodeUnhealthyException extends IOException {
  private static final long serialVersionUID = 1L;

  /** For the DataNode at {@code path}, in {@code state}. */
  public DataNodeUnhealthyException(String path, HealthState state) {
    super(
        "DataNode at "
            + path
            + " is "
            + state.name().toLowerCase(java.util.Locale.ROOT)
            + ": replica not asked for there (read from another DataNode; see the DataNode"
            + " health in scr doctor --pid or the HealthState metric)");
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
