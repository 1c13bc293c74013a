package io.scr.core.metrics;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** docs/metrics.md lists every metric the client publishes, with the name the code uses. */
class MetricsDocTest {
  @Test
  void everyMetricIsDocumented() throws Exception {
    Path doc = Paths.get("..", "docs", "metrics.md");
    String text = new String(Files.readAllBytes(doc), StandardCharsets.UTF_8);
    String total =
        text.substring(
            text.indexOf("### Record `ScrClient`"), text.indexOf("### Record `ScrClientPath`"));
    String perPath =
        text.substring(text.indexOf("### Record `ScrClientPath`"), text.indexOf("## Summary line"));
    List<String> missing = new ArrayList<>();
    for (String n : ClientMetric.names(false)) {
      if (!total.contains("| `" + n + "` |")) {
        missing.add(n);
      }
    }
    for (String n : ClientMetric.names(true)) {
      if (!perPath.contains("| `" + n + "` |")) {
        missing.add("path " + n);
      }
    }
    assertTrue(missing.isEmpty(), "not in docs/metrics.md: " + missing);
  }
}
