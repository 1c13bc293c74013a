package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode A: engine close against a stock DataNode with libhadoop. */
class StockScrEngineCloseTest extends AbstractEngineCloseTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @BeforeAll
  static void stockDataNodesNeedLibhadoop() {
    StockNative.requireAvailable();
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
