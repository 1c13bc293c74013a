package io.scr.it.hbase;

import org.junit.jupiter.api.BeforeAll;

/** HBase reads through ScrFileSystem as fs.hdfs.impl, served by the scr shim (mode B). */
class HBaseScrFileSystemShimTest extends AbstractHBaseScrTest {
  @BeforeAll
  static void start() throws Exception {
    startCluster(DataNodeSide.SHIM, ClientSide.SCR_FILE_SYSTEM);
  }
}
