package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Cached replicas read zero-copy on DataNodes running the scr shim: ScrFileSystem (mode B, no
 * libhadoop) and the stock client (mode C, skipped where {@link StockLibhadoop#unusable()}). The
 * shim's invalidation scan runs once a minute here, so each anchorable change the test sees is the
 * one the DataNode's cache event made at once, as a stock DataNode makes it, not the scan's.
 */
class ShimCachedReplicaZeroCopyConformanceTest
    extends AbstractCachedReplicaZeroCopyConformanceTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK_SIZE)
          .mode(DataNodeMode.SHIM)
          .configure(
              c -> {
                CACHING.accept(c);
                c.setLong("scr.shim.invalidation.interval.ms", 60_000);
              })
          .buildExtension();

  @Override
  protected MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  protected List<ReadPath> paths() {
    return List.of(ReadPath.SCR_FILESYSTEM, ReadPath.STOCK_SCR);
  }
}
