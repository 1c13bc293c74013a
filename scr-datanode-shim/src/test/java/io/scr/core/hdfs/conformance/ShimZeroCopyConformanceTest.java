package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * DataNodes running the scr shim: ScrFileSystem's zero-copy reads (mode B, no libhadoop) and the
 * stock client's (mode C, skipped where {@link StockLibhadoop#unusable()}), stock's expectations.
 * Lives here because the shim depends on scr-core, not the reverse.
 */
class ShimZeroCopyConformanceTest extends AbstractZeroCopyConformanceTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.SHIM).buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  protected List<ReadPath> paths() {
    return List.of(ReadPath.SCR_FILESYSTEM, ReadPath.STOCK_SCR);
  }
}
