package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode A: a stock DataNode with libhadoop. */
class StockScrDeployedPropertiesTest extends AbstractDeployedPropertiesTest {
  @RegisterExtension
  static final MiniDfsExtension DFS = cluster().mode(DataNodeMode.STOCK_SCR).buildExtension();

  @BeforeAll
  static void stockDataNodesNeedLibhadoop() {
    StockNative.requireAvailable();
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
