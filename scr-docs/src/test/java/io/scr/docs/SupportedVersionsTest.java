package io.scr.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The "Supported versions" table of {@code docs/user-guide.md} is exactly what the matrix's last
 * results ({@code docs/matrix-results.tsv}) render to.
 */
class SupportedVersionsTest {
  private static Path docs() {
    String dir = System.getProperty("scr.docs.dir");
    assertTrue(dir != null && !dir.isEmpty(), "surefire sets scr.docs.dir");
    return Paths.get(dir);
  }

  @Test
  void userGuideTableMatchesTheLastMatrixResults() throws IOException {
    Path guide = docs().resolve("user-guide.md");
    List<SupportedVersions.Cell> cells =
        SupportedVersions.read(docs().resolve("matrix-results.tsv"));
    assertFalse(cells.isEmpty(), "docs/matrix-results.tsv lists no cell");
    String committed = new String(Files.readAllBytes(guide), StandardCharsets.UTF_8);
    String expected = SupportedVersions.replaceBlock(committed, SupportedVersions.render(cells));
    if (Boolean.getBoolean("scr.docs.update")) {
      Files.write(guide, expected.getBytes(StandardCharsets.UTF_8));
      committed = expected;
    }
    if (!committed.equals(expected)) {
      fail(
          "docs/user-guide.md's Supported versions table differs from docs/matrix-results.tsv:"
              + " run "
              + SupportedVersions.REGENERATE_COMMAND
              + " (and commit both files)");
    }
  }

  @Test
  void everyCellAppearsWithItsOutcomeAndCounts() {
    List<SupportedVersions.Cell> cells =
        SupportedVersions.parse(
            Arrays.asList(
                SupportedVersions.HEADER,
                "hadoop-3.5.0\tHadoop 3.5.0\t17\tconformance, mode B\t56\t42\t0\t14\t312\t201\tpass"
                    + "\tmodes A and C need a libhadoop built for 3.5",
                "spark-3.5\tSpark 3.5.8\t17\tSparkScrTest\t2\t0\t2\t0\t90\t60\tfail\t"));
    String md = SupportedVersions.render(cells);
    assertTrue(
        md.contains(
            "| hadoop-3.5.0 | Hadoop 3.5.0 | 17 | conformance, mode B | 42 / 0 / 14 | 312 s (201 s)"
                + " | **PASS** |"),
        md);
    assertTrue(
        md.contains("| spark-3.5 | Spark 3.5.8 | 17 | SparkScrTest | 0 / 2 / 0 | 90 s (60 s) |"),
        md);
    assertTrue(md.contains("- **hadoop-3.5.0**: modes A and C need a libhadoop built for 3.5"), md);
    assertFalse(md.contains("- **spark-3.5**"), md);
  }

  @Test
  void aMalformedRowNamesItsLine() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SupportedVersions.parse(Arrays.asList(SupportedVersions.HEADER, "a\tb")));
    assertTrue(
        e.getMessage().startsWith("matrix results line 2 has 2 tab-separated fields"),
        e.getMessage());
  }

  @Test
  void aGuideWithoutTheMarkersIsRefusedWithTheLinesToAdd() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SupportedVersions.replaceBlock("# User guide\n", "x"));
    assertTrue(e.getMessage().contains(SupportedVersions.BEGIN), e.getMessage());
    assertEquals(
        "a\nNEW\nb",
        SupportedVersions.replaceBlock(
            "a\n" + SupportedVersions.BEGIN + "\nold\n" + SupportedVersions.END + "\nb", "NEW"));
  }
}
