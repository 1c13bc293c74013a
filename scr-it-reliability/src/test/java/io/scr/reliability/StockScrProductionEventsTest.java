package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Mode A: the production events against stock DataNodes with libhadoop. */
class StockScrProductionEventsTest extends AbstractProductionEventsTest {
  @RegisterExtension
  static final MiniDfsExtension ONE = cluster(1, DataNodeMode.STOCK_SCR).buildExtension();

  @BeforeAll
  static void stockDataNodesNeedLibhadoop() {
    StockNative.requireAvailable();
  }

  @Override
  MiniDfs oneDataNode() {
    return ONE.dfs();
  }
}
