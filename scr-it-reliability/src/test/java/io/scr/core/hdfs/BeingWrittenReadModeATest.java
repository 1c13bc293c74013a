package io.scr.core.hdfs;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link BeingWrittenReadContract} against stock DataNodes with libhadoop (mode A). */
class BeingWrittenReadModeATest extends BeingWrittenReadContract {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
