package io.scr.it.hbase;

import org.junit.jupiter.api.BeforeAll;

/**
 * HBase reads through ScrFileSystem as fs.hdfs.impl, served by a stock DataNode with libhadoop
 * (mode A; run by the mode-a surefire execution, which puts libhadoop on java.library.path).
 */
class HBaseScrFileSystemStockDataNodeTest extends AbstractHBaseScrTest {
  @BeforeAll
  static void start() throws Exception {
    startCluster(DataNodeSide.STOCK, ClientSide.SCR_FILE_SYSTEM);
  }
}
