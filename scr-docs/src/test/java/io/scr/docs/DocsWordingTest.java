package io.scr.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The user documentation ({@code docs/}, the README), the code and tests of every module, the poms
 * and the CI scripts speak of the product only, and configuration keys are tabulated in one place.
 *
 * <p>Two rules, each reported with file:line so the fix is one edit away:
 *
 * <ul>
 *   <li>No words about how the work was organised: "session" in the sense of a working session (a
 *       Kerberos, ZooKeeper, TLS... session is a product fact and passes), "issue N" / "issue #N" /
 *       "the issue's", "deliverable". Upstream ids such as HDFS-2757 or HBASE-14004 pass: they name
 *       a public bug, not our work. The history of a figure or a decision is in git.
 *   <li>No markdown key table outside the generated {@code docs/configuration.md}: a table whose
 *       header has a "Default" column and whose first column names {@code scr.*} or {@code dfs.*}
 *       keys would drift from the catalogues the generated reference is rendered from. Docs link to
 *       the reference and describe behaviour in prose.
 * </ul>
 */
class DocsWordingTest {
  /** Qualifiers that make "session" a product fact rather than a working session. */
  private static final String SESSION_KINDS =
      "kerberos|zookeeper|zk|sasl|tls|ssl|ssh|http|https|spark|hive|jdbc|login|user|client|browser";

  /** Subjects that make "issues 3" the verb ("the NameNode issues 3 tokens"), not a ticket. */
  private static final String ISSUERS =
      "it|they|we|which|that|who|namenode|datanode|client|clients|shim|server|reader|thread|pool";

  private static final List<Pattern> WORK_WORDS =
      List.of(
          Pattern.compile(
              "(?<!(?:" + SESSION_KINDS + ")[ -])\\bsessions?\\b", Pattern.CASE_INSENSITIVE),
          Pattern.compile(
              "(?<!(?:" + ISSUERS + ") )\\bissues?\\s*#?\\d+", Pattern.CASE_INSENSITIVE),
          Pattern.compile("\\bthe issue['’]s\\b", Pattern.CASE_INSENSITIVE),
          Pattern.compile("\\bdeliverables?\\b", Pattern.CASE_INSENSITIVE));

  /** A configuration key as the first cell of a table row: {@code | `scr.cache.capacity` |}. */
  private static final Pattern KEY_ROW =
      Pattern.compile("^\\s*\\|\\s*`?(?:scr|dfs)\\.[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)+`?\\s*\\|");

  private static final String GENERATED_REFERENCE = "configuration.md";

  private static Path docsDir() {
    String dir = System.getProperty("scr.docs.dir");
    assertTrue(dir != null && !dir.isEmpty(), "surefire sets scr.docs.dir");
    return Paths.get(dir).toAbsolutePath().normalize();
  }

  /** docs/**.md and the README: what a user reads. */
  private static List<Path> userDocs() throws IOException {
    Path docs = docsDir();
    List<Path> files;
    try (Stream<Path> s = Files.walk(docs)) {
      files = s.filter(p -> p.toString().endsWith(".md")).sorted().collect(Collectors.toList());
    }
    Path readme = docs.getParent().resolve("README.md");
    if (Files.exists(readme)) {
      files.add(readme);
    }
    return files;
  }

  /** Every text file under a module's src/main: code comments, resources, scripts. */
  private static List<Path> mainSources() throws IOException {
    return moduleFiles("main");
  }

  /**
   * What a maintainer reads beside the main code: every module's src/test and pom, and the CI
   * scripts. This class is left out: its samples are the words it looks for.
   */
  private static List<Path> buildAndTestSources() throws IOException {
    Path root = docsDir().getParent();
    List<Path> files = moduleFiles("test");
    files.removeIf(p -> p.getFileName().toString().equals("DocsWordingTest.java"));
    files.add(root.resolve("pom.xml"));
    try (Stream<Path> modules = Files.list(root)) {
      modules
          .map(m -> m.resolve("pom.xml"))
          .filter(Files::isRegularFile)
          .sorted()
          .forEach(files::add);
    }
    Path ci = root.resolve(".ci");
    if (Files.isDirectory(ci)) {
      try (Stream<Path> s = Files.walk(ci)) {
        s.filter(Files::isRegularFile).sorted().forEach(files::add);
      }
    }
    return files;
  }

  /** Every regular file under {@code <module>/src/<part>} of every module. */
  private static List<Path> moduleFiles(String part) throws IOException {
    Path root = docsDir().getParent();
    List<Path> files = new ArrayList<>();
    try (Stream<Path> modules = Files.list(root)) {
      for (Path module : modules.sorted().collect(Collectors.toList())) {
        Path dir = module.resolve("src").resolve(part);
        if (Files.isRegularFile(module.resolve("pom.xml")) && Files.isDirectory(dir)) {
          try (Stream<Path> s = Files.walk(dir)) {
            s.filter(Files::isRegularFile).sorted().forEach(files::add);
          }
        }
      }
    }
    return files;
  }

  private static List<String> lines(Path file) throws IOException {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (MalformedInputException binary) {
      return List.of(); // an image or another binary resource: no prose in it
    }
  }

  static List<String> workWords(Path root, List<Path> files) throws IOException {
    List<String> hits = new ArrayList<>();
    for (Path file : files) {
      List<String> lines = lines(file);
      for (int i = 0; i < lines.size(); i++) {
        for (Pattern p : WORK_WORDS) {
          Matcher m = p.matcher(lines.get(i));
          if (m.find()) {
            hits.add(root.relativize(file) + ":" + (i + 1) + ": \"" + m.group() + "\"");
          }
        }
      }
    }
    return hits;
  }

  static List<String> keyTables(Path root, List<Path> files) throws IOException {
    List<String> hits = new ArrayList<>();
    for (Path file : files) {
      if (file.getFileName().toString().equals(GENERATED_REFERENCE)) {
        continue;
      }
      List<String> lines = lines(file);
      int i = 0;
      while (i < lines.size()) {
        if (!lines.get(i).trim().startsWith("|")) {
          i++;
          continue;
        }
        int header = i;
        boolean defaults = lines.get(header).toLowerCase(Locale.ROOT).contains("default");
        for (i = header + 1; i < lines.size() && lines.get(i).trim().startsWith("|"); i++) {
          if (defaults && KEY_ROW.matcher(lines.get(i)).find()) {
            hits.add(root.relativize(file) + ":" + (header + 1));
            while (i < lines.size() && lines.get(i).trim().startsWith("|")) {
              i++;
            }
            break;
          }
        }
      }
    }
    return hits;
  }

  @Test
  void docsSpeakOfTheProductOnly() throws IOException {
    Path root = docsDir().getParent();
    assertEquals(
        List.of(),
        workWords(root, userDocs()),
        "words about how the work was organised, not about the product: say the product fact"
            + " (the reason, the measured figure and its conditions); the history is in git");
  }

  @Test
  void mainCodeSpeaksOfTheProductOnly() throws IOException {
    Path root = docsDir().getParent();
    assertEquals(
        List.of(),
        workWords(root, mainSources()),
        "words about how the work was organised in src/main: give the reason itself");
  }

  @Test
  void testsAndBuildSpeakOfTheProductOnly() throws IOException {
    Path root = docsDir().getParent();
    assertEquals(
        List.of(),
        workWords(root, buildAndTestSources()),
        "words about how the work was organised in a test, a pom or a CI script: name the"
            + " behaviour the test checks, not the work item it came from");
  }

  @Test
  void keysAreTabulatedOnlyInTheGeneratedReference() throws IOException {
    Path root = docsDir().getParent();
    List<Path> files = new ArrayList<>(userDocs());
    files.addAll(mainSources());
    assertEquals(
        List.of(),
        keyTables(root, files),
        "a markdown table of keys and defaults outside docs/"
            + GENERATED_REFERENCE
            + ": link to the generated reference and describe behaviour in prose");
  }

  @Test
  void patternsTellWorkWordsFromProductWords(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("sample.md");
    Files.write(
        file,
        List.of(
            "A Kerberos session, a ZooKeeper session and SparkSession are product facts.",
            "Upstream HDFS-2757 and HBASE-14004 name public bugs; see Known issues below.",
            "The NameNode issues 3 tokens and the client issues 2 requests.",
            "Measured in session 9.",
            "Fixed for issue 16.",
            "See issue #7.",
            "As the issue's target says.",
            "Deliverable 3 of the plan."),
        StandardCharsets.UTF_8);
    assertEquals(
        List.of(
            "sample.md:4: \"session\"",
            "sample.md:5: \"issue 16\"",
            "sample.md:6: \"issue #7\"",
            "sample.md:7: \"the issue's\"",
            "sample.md:8: \"Deliverable\""),
        workWords(dir, List.of(file)));
  }

  @Test
  void aKeyTableIsFoundButAKeyMentionedInATableIsNot(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("sample.md");
    Files.write(
        file,
        List.of(
            "| Builder method | Default | Meaning |",
            "|---|---|---|",
            "| `capacity(int)` | from the fd limit | entries (`scr.cache.capacity` in scr-core) |",
            "",
            "| Metric | Meaning |",
            "|---|---|",
            "| `scr.client.reads` | reads served |",
            "",
            "| Key | Default | Meaning |",
            "|---|---|---|",
            "| `scr.shim.io.threads` | 2 | event loops |"),
        StandardCharsets.UTF_8);
    assertEquals(List.of("sample.md:9"), keyTables(dir, List.of(file)));
  }
}
