package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The conformance suite of scr-core (its test-jar) against DataNodes running the scr shim: mode B
 * (ScrFileSystem and the accessor, no libhadoop on either side), mode C (the stock client with
 * libhadoop, served by the shim; skipped where {@link StockLibhadoop#unusable()}) and the stock TCP
 * reference on the same cluster. Lives here because the shim depends on scr-core, not the reverse.
 */
class ShimDataNodeConformanceTest extends AbstractReadConformanceTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.SHIM).buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  protected List<ReadPath> paths() {
    return List.of(
        ReadPath.SCR_FILESYSTEM, ReadPath.SCR_ACCESSOR, ReadPath.STOCK_SCR, ReadPath.STOCK_TCP);
  }
}
