package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/**
 * The shim reads its keys through the catalogue: unset keys take the catalogue's defaults, set ones
 * their trimmed values, and a DataNode refuses to start on a number or switch set to nothing, not a
 * number, or not positive.
 */
class ShimConfigTest {
  private static Configuration conf(String... kv) {
    Configuration c = new Configuration(false);
    for (int i = 0; i < kv.length; i += 2) {
      c.set(kv[i], kv[i + 1]);
    }
    return c;
  }

  @Test
  void unsetKeysTakeTheCataloguesDefaultsAndSetOnesTheirValues() {
    ShimConfig defaults = ShimConfig.from(conf());
    assertEquals(ScrShimKeys.SOCKET_BACKLOG.defaultValue(), defaults.backlog);
    assertEquals(ScrShimKeys.RECEIPT_TIMEOUT_MS.defaultValue(), defaults.receiptTimeoutMs);
    assertEquals(
        ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.defaultValue(), defaults.fdRequestsOnEventLoop);
    assertEquals(Paths.get(ScrShimKeys.SHM_DIR.defaultValue()), defaults.shmDir);
    assertEquals(2 * ScrShimKeys.MAX_REQUEST_BYTES.defaultValue(), defaults.pendingInputLimit);

    ShimConfig set =
        ShimConfig.from(
            conf(
                ScrShimKeys.SOCKET_BACKLOG.name(), " 77 ",
                ScrShimKeys.RECEIPT_TIMEOUT_MS.name(), "1234",
                ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), "FALSE",
                ScrShimKeys.SOCKET_PATH.name(), " /run/dn._PORT.sock "));
    assertEquals(77, set.backlog);
    assertEquals(1234L, set.receiptTimeoutMs);
    assertFalse(set.fdRequestsOnEventLoop);
    assertEquals("/run/dn._PORT.sock", set.socketPathTemplate);
  }

  @Test
  void aNumberOrSwitchSetToNothingOrToNonsenseIsRefusedNamingTheKey() {
    for (String[] bad :
        new String[][] {
          {ScrShimKeys.IO_THREADS.name(), ""},
          {ScrShimKeys.IO_THREADS.name(), "0"},
          {ScrShimKeys.IO_THREADS.name(), "two"},
          {ScrShimKeys.WRITE_TIMEOUT_MS.name(), "-1"},
          {ScrShimKeys.SHM_USE_MEMFD.name(), " "},
          {ScrShimKeys.SHM_USE_MEMFD.name(), "yes"},
        }) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> ShimConfig.from(conf(bad)));
      assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
    }
  }
}
