package io.scr.it.hbase;

import org.junit.jupiter.api.BeforeAll;

/** Replication tails a live WAL through ScrFileSystem, served by the scr shim (mode B). */
class HBaseWalTailShimTest extends AbstractHBaseWalTailTest {
  @BeforeAll
  static void start() throws Exception {
    AbstractHBaseScrTest.startCluster(
        AbstractHBaseScrTest.DataNodeSide.SHIM,
        AbstractHBaseScrTest.ClientSide.SCR_FILE_SYSTEM,
        AbstractHBaseWalTailTest::regionServerKeys);
  }
}
