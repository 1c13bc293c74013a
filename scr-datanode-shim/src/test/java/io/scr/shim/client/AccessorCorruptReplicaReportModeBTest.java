package io.scr.shim.client;

import io.scr.core.hdfs.AbstractAccessorCorruptReplicaReportTest;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code AbstractAccessorCorruptReplicaReportTest} in mode B: DataNodes with the scr shim. */
class AccessorCorruptReplicaReportModeBTest extends AbstractAccessorCorruptReplicaReportTest {
  static {
    io.scr.shim.JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(REPLICATION)
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(CLUSTER)
          .buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }
}
