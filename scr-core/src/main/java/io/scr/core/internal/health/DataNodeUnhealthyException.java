package io.scr.core.internal.health;

import io.scr.core.stats.HealthState;
import java.io.IOException;

/**
 * A replica open was not attempted because the DataNode at its socket is not healthy: the read goes
 * the stock way (another replica) until a probe or a request is answered again. Carries no stack
 * trace (it is a decision, not a failure, and may be thrown on every first read while a DataNode
 * hangs).
 */
public final class DataNodeUnhealthyException extends IOException {
  private static final long serialVersionUID = 1L;

  private final boolean timedOutHere;

  /** For the DataNode at {@code path}, in {@code state}, known before the open began. */
  public DataNodeUnhealthyException(String path, HealthState state) {
    this(path, state, false);
  }

  /**
   * For the DataNode at {@code path}, in {@code state}; {@code timedOutHere}: this open's own
   * request (a segment request) waited the whole deadline and made it so.
   */
  public DataNodeUnhealthyException(String path, HealthState state, boolean timedOutHere) {
    super(
        "DataNode at "
            + path
            + (state == HealthState.HEALTHY
                ? " is back on a probe's answer only, and one request sent off the read path is"
                    + " testing it"
                : " is " + state.name().toLowerCase(java.util.Locale.ROOT))
            + ": replica not asked for there (read from another DataNode; see the DataNode"
            + " health in scr doctor --pid or the HealthState metric)");
    this.timedOutHere = timedOutHere;
  }

  /** Whether this open waited the whole deadline itself (counted as a timeout, not a skip). */
  public boolean timedOutHere() {
    return timedOutHere;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
