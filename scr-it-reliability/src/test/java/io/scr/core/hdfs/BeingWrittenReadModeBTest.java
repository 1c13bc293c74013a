package io.scr.core.hdfs;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link BeingWrittenReadContract} against DataNodes serving through the scr shim (mode B). */
class BeingWrittenReadModeBTest extends BeingWrittenReadContract {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
