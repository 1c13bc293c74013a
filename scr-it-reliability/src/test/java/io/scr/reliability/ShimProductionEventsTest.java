package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode B: the production events against DataNodes running the scr shim; no libhadoop anywhere. */
class ShimProductionEventsTest extends AbstractProductionEventsTest {
  @RegisterExtension
  static final MiniDfsExtension ONE = cluster(1, DataNodeMode.SHIM).buildExtension();

  @Override
  MiniDfs oneDataNode() {
    return ONE.dfs();
  }
}
