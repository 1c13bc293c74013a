package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode B: the scr client against DataNodes running the scr shim; no libhadoop anywhere. */
class ShimFaultTest extends AbstractFaultTest {
  @RegisterExtension
  static final MiniDfsExtension DFS = cluster().mode(DataNodeMode.SHIM).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
