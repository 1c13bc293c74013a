package io.scr.reliability;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Scenario 7 in mode B: the shim has no memfd and its {@code scr.shim.shm.dir} is missing,
 * unwritable or full. The shim creates each segment when asked, so a state change needs no restart,
 * and its refusal carries the cause.
 */
class ShimNoShmTest extends AbstractNoShmTest {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(64 * 1024)
          .mode(DataNodeMode.SHIM)
          .configure(
              c -> {
                c.setBoolean("scr.shim.shm.memfd", false);
                c.set("scr.shim.shm.dir", SHM_DIR.path().toString());
              })
          .buildExtension();

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Override
  void dataNodesSeeTheNewState() {}

  @Override
  String expectedReason(String state) {
    switch (state) {
      case "missing":
        return "No such file or directory";
      case "unwritable":
        return ShmDir.isRoot() ? "Read-only file system" : "Permission denied";
      default:
        return "No space left on device";
    }
  }
}
