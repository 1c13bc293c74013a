package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import org.junit.jupiter.api.condition.DisabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode A (stock DataNode with libhadoop): the scr read paths, ScrFileSystem (with mapped reads off,
 * the default, and on) and the accessor.
 */
@DisabledIf(
    value = "io.scr.core.hdfs.conformance.StockLibhadoop#unusable",
    disabledReason = "stock DataNode needs libhadoop; see StockLibhadoop.REASON")
class ScrPathsStockDataNodeConformanceTest extends AbstractReadConformanceTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  protected List<ReadPath> paths() {
    return List.of(ReadPath.SCR_FILESYSTEM, ReadPath.SCR_ACCESSOR, ReadPath.SCR_FILESYSTEM_MAPPED);
  }
}
