package io.scr.reliability;

import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.health.HealthPolicy;
import io.scr.core.stats.HealthState;
import io.scr.core.stats.HealthStatus;

/**
 * The process-wide health changes of every DataNode socket the tests' clients used, for reports:
 * how often each DataNode was suspected, judged unresponsive or dead. A change to unresponsive of a
 * DataNode that was never stopped is a false suspicion of a DataNode that was only busy.
 */
final class HealthChanges {
  private HealthChanges() {}

  /** One line: per socket, the transitions into suspect, unresponsive and dead so far. */
  static String summary() {
    StringBuilder sb = new StringBuilder();
    // The registry is shared by the process; the policy argument only matters to the first caller.
    for (HealthStatus s : DataNodeHealth.shared(HealthPolicy.defaults()).snapshot()) {
      String path = s.path();
      sb.append(sb.length() == 0 ? "" : "; ")
          .append(path.substring(path.lastIndexOf('/') + 1))
          .append(": suspect ")
          .append(s.transitionsTo(HealthState.SUSPECT))
          .append(", unresponsive ")
          .append(s.transitionsTo(HealthState.UNRESPONSIVE))
          .append(", dead ")
          .append(s.transitionsTo(HealthState.DEAD));
    }
    return "health changes: " + (sb.length() == 0 ? "none" : sb.toString());
  }
}
