package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import org.junit.jupiter.api.condition.DisabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Cached replicas read zero-copy on stock DataNodes with libhadoop: stock short-circuit is the
 * reference, ScrFileSystem must do the same (mode A).
 */
@DisabledIf(
    value = "io.scr.core.hdfs.conformance.StockLibhadoop#unusable",
    disabledReason = "stock DataNode needs libhadoop; see StockLibhadoop.REASON")
class CachedReplicaZeroCopyConformanceTest extends AbstractCachedReplicaZeroCopyConformanceTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK_SIZE)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(CACHING)
          .buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  protected List<ReadPath> paths() {
    return List.of(ReadPath.STOCK_SCR, ReadPath.SCR_FILESYSTEM);
  }
}
