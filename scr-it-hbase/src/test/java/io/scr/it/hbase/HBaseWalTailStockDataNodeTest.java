package io.scr.it.hbase;

import org.junit.jupiter.api.BeforeAll;

/**
 * Replication tails a live WAL through ScrFileSystem, served by a stock DataNode with libhadoop
 * (mode A; run by the mode-a surefire execution, which puts libhadoop on java.library.path).
 */
class HBaseWalTailStockDataNodeTest extends AbstractHBaseWalTailTest {
  @BeforeAll
  static void start() throws Exception {
    AbstractHBaseScrTest.startCluster(
        AbstractHBaseScrTest.DataNodeSide.STOCK,
        AbstractHBaseScrTest.ClientSide.SCR_FILE_SYSTEM,
        AbstractHBaseWalTailTest::regionServerKeys);
  }
}
