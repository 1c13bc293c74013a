package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import java.io.IOException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Scenario 7 in mode A: the stock DataNode's {@code dfs.datanode.shared.file.descriptor.paths} is
 * missing, unwritable or full. The DataNode probes it once, at start-up (a 1-byte file): missing or
 * unwritable disables its shared memory, answered with ERROR_UNSUPPORTED and a fixed message that
 * does not name the cause; a full directory passes the probe and fails each 8 KiB segment, with the
 * cause.
 */
class StockScrNoShmTest extends AbstractNoShmTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(64 * 1024)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(
              c -> c.set("dfs.datanode.shared.file.descriptor.paths", SHM_DIR.path().toString()))
          .buildExtension();

  @BeforeAll
  static void stockDataNodesNeedLibhadoop() {
    StockNative.requireAvailable();
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  void dataNodesSeeTheNewState() throws IOException {
    assertTrue(DFS.dfs().cluster().restartDataNode(0, true), "restart DataNode 0");
    DFS.dfs().cluster().waitActive();
  }

  @Override
  String expectedReason(String state) {
    return "full".equals(state) ? "No space left on device" : null;
  }
}
