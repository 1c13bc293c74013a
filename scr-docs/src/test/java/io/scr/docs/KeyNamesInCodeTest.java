package io.scr.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.config.ConfigKey;
import io.scr.core.ScrKeys;
import io.scr.shim.ScrShimKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Main code names a configuration key only through its catalogue ({@code ScrKeys.X.name()}, {@code
 * ScrShimKeys.X}): a key name written out as a string literal elsewhere would keep its old spelling
 * when the catalogue's changes. Reported with file:line.
 *
 * <p>Two kinds of file may spell keys out, and only keys of the other side: scr-testing (test
 * support every module uses, which depends on neither catalogue's module) and the client's doctor
 * and messages when they point an operator at the DataNode shim's keys (the client does not depend
 * on the shim).
 */
class KeyNamesInCodeTest {
  private static final Pattern STRING_LITERAL = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"");

  private static Path repo() {
    String dir = System.getProperty("scr.docs.dir");
    assertTrue(dir != null && !dir.isEmpty(), "surefire sets scr.docs.dir");
    return Paths.get(dir).toAbsolutePath().normalize().getParent();
  }

  private static List<Path> mainSources(Path repo) throws IOException {
    List<Path> out = new ArrayList<>();
    try (Stream<Path> modules = Files.list(repo)) {
      for (Path module : modules.collect(Collectors.toList())) {
        Path main = module.resolve("src/main/java");
        if (!Files.isDirectory(main) || module.getFileName().toString().equals("scr-testing")) {
          continue;
        }
        try (Stream<Path> files = Files.walk(main)) {
          files.filter(f -> f.toString().endsWith(".java")).forEach(out::add);
        }
      }
    }
    return out;
  }

  /**
   * The literals of {@code files} in {@code modules} that spell one of {@code keys}; the catalogues
   * themselves may (a description names the keys it works with).
   */
  private static List<String> literalsNaming(
      List<Path> files, Path repo, List<ConfigKey<?>> keys, Set<String> modules)
      throws IOException {
    List<Pattern> names = new ArrayList<>();
    for (ConfigKey<?> k : keys) {
      names.add(Pattern.compile("(?<![\\w.-])" + Pattern.quote(k.name()) + "(?![\\w-]|\\.[a-z])"));
    }
    List<String> found = new ArrayList<>();
    for (Path f : files) {
      String rel = repo.relativize(f).toString();
      String file = f.getFileName().toString();
      if (file.equals("ScrKeys.java")
          || file.equals("ScrShimKeys.java")
          || !modules.contains(rel.substring(0, rel.indexOf('/')))) {
        continue;
      }
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        Matcher lit = STRING_LITERAL.matcher(lines.get(i));
        while (lit.find()) {
          for (Pattern name : names) {
            if (name.matcher(lit.group()).find()) {
              found.add(rel + ":" + (i + 1) + ": " + lit.group());
            }
          }
        }
      }
    }
    return found;
  }

  @Test
  void clientKeysAreNamedThroughTheirCatalogueInEveryModule() throws IOException {
    Path repo = repo();
    List<Path> files = mainSources(repo);
    Set<String> all =
        files.stream()
            .map(f -> repo.relativize(f).getName(0).toString())
            .collect(Collectors.toSet());
    assertTrue(all.contains("scr-core") && all.contains("scr-datanode-shim"), all.toString());
    List<String> found = literalsNaming(files, repo, ScrKeys.all(), all);
    assertEquals(List.of(), found, "use ScrKeys.<KEY>.name() instead of the literal");
  }

  @Test
  void shimKeysAreNamedThroughTheirCatalogueWhereItCanBeReached() throws IOException {
    Path repo = repo();
    List<Path> files = mainSources(repo);
    Set<String> reach =
        files.stream()
            .map(f -> repo.relativize(f).getName(0).toString())
            .filter(m -> !m.equals("scr-core"))
            .collect(Collectors.toSet());
    List<String> found = literalsNaming(files, repo, ScrShimKeys.all(), reach);
    assertEquals(List.of(), found, "use ScrShimKeys.<KEY> instead of the literal");
  }
}
