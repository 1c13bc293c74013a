package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Scenario 7 in mode B: the shim has no memfd and its {@code scr.shim.shm.dir} is missing. */
class ShimNoShmTest extends AbstractNoShmTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(64 * 1024)
          .mode(DataNodeMode.SHIM)
          .configure(
              c -> {
                c.setBoolean("scr.shim.shm.memfd", false);
                c.set("scr.shim.shm.dir", MISSING_SHM_DIR);
              })
          .buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }
}
