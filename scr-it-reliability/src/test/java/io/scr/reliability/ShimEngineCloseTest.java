package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode B: engine close against a DataNode running the scr shim; no libhadoop anywhere. */
class ShimEngineCloseTest extends AbstractEngineCloseTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
