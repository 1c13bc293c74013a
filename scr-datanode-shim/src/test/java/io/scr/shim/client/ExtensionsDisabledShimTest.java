package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.shim.ScrShimKeys;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B with {@code scr.shim.extensions.enabled=false} on the DataNode: the shim answers the
 * client's one HELLO (a release of a slot no DataNode registers) as a stock DataNode does, with
 * ERROR_INVALID, so the client finds a stock peer and every release goes out as op 88, with nothing
 * surfaced. The other mode B cases are in {@link ExtensionsModeBTest}.
 */
class ExtensionsDisabledShimTest extends ShimExtensionsTestBase {
  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setBoolean(ScrShimKeys.EXTENSIONS_ENABLED.name(), false))
          .buildExtension();

  @BeforeAll
  static void write() throws Exception {
    writeFiles(DFS.dfs());
  }

  @Override
  MiniDfs dfs() {
    return DFS.dfs();
  }

  @Test
  void shimWithoutExtensionsIsAskedOnceAndGetsOp88() throws Exception {
    Map<String, Long> before = shimCounters();
    try (Engine client = Engine.acquire(conf("ext-shim-off", true))) {
      long released = leaseAllThenRelease(client, "/ext/a");
      released += leaseAllThenRelease(client, "/ext/b");
      ClientSnapshot s = client.metricsSnapshot();
      Map<String, Long> after = shimCounters();

      assertTrue(released > BLOCKS, "slots were released: " + released);
      assertEquals(1, client.extensions().probeCount(), "one HELLO, refused as an unknown slot");
      assertEquals(0, s.extensionPeers());
      assertEquals(0, s.extensionFailures());
      assertEquals(released, s.releaseRequestsOp88());
      assertEquals(0, s.releaseRequestsBatched());
      assertEquals(0, releaseFailures(client));
      assertEquals(0, shim(after, "rejections.unknown_op") - shim(before, "rejections.unknown_op"));
      assertEquals(
          1,
          shim(after, "requests.release_fds.error_invalid")
              - shim(before, "requests.release_fds.error_invalid"),
          "the HELLO, refused as the release of an unknown segment");
      assertEquals(
          released,
          shim(after, "requests.release_fds.success")
              - shim(before, "requests.release_fds.success"));
      for (io.scr.core.stats.BackoffStatus b : client.backoffStatus()) {
        assertEquals(0, b.failures(), "no failure recorded: " + b);
      }
    }
  }
}
