package io.scr.it.hbase;

import org.junit.jupiter.api.BeforeAll;

/**
 * HBase reads through the replica accessor in the stock file system, served by the scr shim (mode
 * B).
 */
class HBaseAccessorShimTest extends AbstractHBaseScrTest {
  @BeforeAll
  static void start() throws Exception {
    startCluster(DataNodeSide.SHIM, ClientSide.ACCESSOR);
  }
}
