package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/metrics.md lists every metric the shim publishes, and nothing the shim does not. */
class ShimMetricsDocTest {
  @Test
  void everyShimMetricIsDocumentedAndEveryDocumentedOneExists() throws Exception {
    Path doc = Paths.get("..", "docs", "metrics.md");
    String text = new String(Files.readAllBytes(doc), StandardCharsets.UTF_8);
    int start = text.indexOf("### Record `ScrShim`");
    assertTrue(start >= 0, "docs/metrics.md has no '### Record `ScrShim`' section");
    int end = text.indexOf("\n#", start + 1);
    String section = end < 0 ? text.substring(start) : text.substring(start, end);
    List<String> names = ShimMetric.names();
    List<String> missing = new ArrayList<>();
    for (String n : names) {
      if (!section.contains("| `" + n + "` |")) {
        missing.add(n);
      }
    }
    assertTrue(missing.isEmpty(), "not in docs/metrics.md: " + missing);
    List<String> unknown = new ArrayList<>();
    Matcher m = Pattern.compile("(?m)^\\| `([A-Za-z0-9]+)` \\|").matcher(section);
    while (m.find()) {
      if (!names.contains(m.group(1))) {
        unknown.add(m.group(1));
      }
    }
    assertTrue(unknown.isEmpty(), "documented but not published by the shim: " + unknown);
  }
}
