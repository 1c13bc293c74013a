package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode B: the scr shim DataNode. */
class ShimDeployedPropertiesTest extends AbstractDeployedPropertiesTest {
  @RegisterExtension
  static final MiniDfsExtension DFS = cluster().mode(DataNodeMode.SHIM).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
