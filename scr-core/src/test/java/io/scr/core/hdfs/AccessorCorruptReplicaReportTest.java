package io.scr.core.hdfs;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link AbstractAccessorCorruptReplicaReportTest} in mode A: stock DataNodes with libhadoop. */
class AccessorCorruptReplicaReportTest extends AbstractAccessorCorruptReplicaReportTest {
  static {
    JvmSingletons.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(REPLICATION)
          .blockSize(BLOCK)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(CLUSTER)
          .buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }
}
