package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Scenario 7 in mode A: the stock DataNode's {@code shared.file.descriptor.paths} are missing. */
class StockScrNoShmTest extends AbstractNoShmTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(64 * 1024)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(c -> c.set("dfs.datanode.shared.file.descriptor.paths", MISSING_SHM_DIR))
          .buildExtension();

  @BeforeAll
  static void stockDataNodesNeedLibhadoop() {
    StockNative.requireAvailable();
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
