package io.scr.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.LogCapture;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/**
 * Two configurations that name the same client context share one engine, as stock shares a {@code
 * ClientContext}; when their scr settings differ, the second one's are ignored, and that is said
 * once, naming the keys and the fix, rather than silently reading through the wrong socket paths.
 */
class SharedContextSettingsTest {
  private static Configuration conf(String socketPaths) {
    Configuration c = new Configuration(false);
    c.set("scr.client.context", "shared-context-settings");
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.set("scr.client.socket.paths", socketPaths);
    c.set("scr.shim.socket.path", "/ignored/by/clients");
    return c;
  }

  @Test
  void aSecondConfigurationWithOtherSettingsSharesTheEngineAndIsToldOnce() {
    try (LogCapture warns = LogCapture.scrWarnings();
        Engine first = Engine.acquire(conf("/run/dn-a/_PORT.sock"));
        Engine same = Engine.acquire(conf("/run/dn-a/_PORT.sock"))) {
      assertSame(first, same);
      assertTrue(warns.all().isEmpty(), "equal settings share quietly: " + warns.all());
      Configuration other = conf("/run/dn-b/_PORT.sock");
      other.set("scr.shim.socket.path", "/a/datanode/key/differs"); // not a client setting
      try (Engine second = Engine.acquire(other);
          Engine third = Engine.acquire(other)) {
        assertSame(first, second);
        assertSame(first, third);
      }
      List<String> lines = warns.matching("already exists with other settings");
      assertEquals(1, lines.size(), "once per context and difference: " + warns.all());
      String line = lines.get(0);
      assertTrue(
          line.contains(
              "scr.client.socket.paths=/run/dn-a/_PORT.sock in use, /run/dn-b/_PORT.sock requested"),
          line);
      assertTrue(line.contains("'shared-context-settings'"), line);
      assertTrue(line.contains("set scr.client.context"), line);
      assertTrue(!line.contains("scr.shim.socket.path"), "DataNode keys are not compared: " + line);
    }
  }
}
