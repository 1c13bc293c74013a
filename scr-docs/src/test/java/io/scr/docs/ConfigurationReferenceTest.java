package io.scr.docs;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.config.ConfigKey;
import io.scr.core.ScrKeys;
import io.scr.shim.ScrShimKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** {@code docs/configuration.md} is exactly what the catalogues render today. */
class ConfigurationReferenceTest {
  private static Path committedFile() {
    String dir = System.getProperty("scr.docs.dir");
    assertTrue(dir != null && !dir.isEmpty(), "surefire sets scr.docs.dir");
    return Paths.get(dir, "configuration.md");
  }

  @Test
  void committedReferenceMatchesTheCatalogues() throws IOException {
    Path file = committedFile();
    String rendered = ConfigurationReference.render();
    if (Boolean.getBoolean("scr.docs.update")) {
      Files.write(file, rendered.getBytes(StandardCharsets.UTF_8));
    }
    String committed =
        Files.exists(file) ? new String(Files.readAllBytes(file), StandardCharsets.UTF_8) : "";
    if (!committed.equals(rendered)) {
      fail(
          "docs/configuration.md is out of date: run "
              + ConfigurationReference.REGENERATE_COMMAND
              + " (and commit the file)");
    }
  }

  @Test
  void everyKeyOfBothCataloguesIsDocumented() {
    String rendered = ConfigurationReference.render();
    for (ConfigKey<?> k : ScrKeys.all()) {
      assertTrue(rendered.contains("| `" + k.name() + "` |"), k.name());
    }
    for (ConfigKey<?> k : ScrShimKeys.all()) {
      assertTrue(rendered.contains("| `" + k.name() + "` |"), k.name());
    }
  }
}
