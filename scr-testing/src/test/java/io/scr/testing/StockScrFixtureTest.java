package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class StockScrFixtureTest extends AbstractFixtureTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  long expectedShortCircuitBytes(long length) {
    return length;
  }

  @Test
  void libhadoopLoadedAndSocketBound() {
    assertNull(StockNative.unavailabilityCause());
    String socket = dfs().socketPath(0);
    assertTrue(socket.startsWith(dfs().socketDir().toString()), socket);
    assertTrue(Files.exists(Paths.get(socket)), "DataNode socket missing: " + socket);
    assertTrue(
        StockDataNodeWatchers.tracks(dfs().cluster().getDataNodes().get(0)),
        "the DataNode should have loaded the watcher audit plugin");
  }
}
