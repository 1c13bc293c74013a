package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class TcpFixtureTest extends AbstractFixtureTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK_SIZE).mode(DataNodeMode.TCP).buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  long expectedShortCircuitBytes(long length) {
    return 0;
  }

  @Test
  void noSocketPathInTcpMode() {
    assertEquals("", dfs().socketPath(0));
  }
}
