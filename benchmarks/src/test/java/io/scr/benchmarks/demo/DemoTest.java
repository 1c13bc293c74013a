package io.scr.benchmarks.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.socketpath.EffectiveUid;
import io.scr.testing.LogCapture;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Keeps the README's {@code ./scr demo} honest: it runs, reads every path (stock, scr in modes A
 * and B), prints figures, serves the scr rows entirely by short-circuit reads and prints scr's
 * counters for them.
 */
class DemoTest {
  private static final Pattern ROW =
      Pattern.compile("(?m)^(stock .+?|scr .+?)\\s{2,}([\\d,]+) .*\\s(\\d+)%\\s+[\\d,.]+$");
  private static final Pattern COUNTERS =
      Pattern.compile(
          "(?m)^(scr .+?)\\s{2,}([\\d,]+)\\s+([\\d,]+)\\s+([\\d.]+)%\\s+(\\d+)\\s+(\\d+)/(\\d+)\\s+([\\d,]+)$");

  @Test
  void printsMeasuredRowsAndCountersForEveryPath() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Demo.Options options =
        Demo.Options.parse(
            new String[] {"--seconds", "0.3", "--file-mib", "4", "--block-kib", "1024"});
    // The shim's socket under the build directory when that passes the socket path rules (as
    // ./scr demo puts it under a secure directory of the user's), else under java.io.tmpdir.
    Path build = Paths.get(System.getProperty("java.io.tmpdir"));
    Path socketBase = Demo.firstSecure(List.of(build), EffectiveUid.self());
    List<String> warnings;
    try (LogCapture captured = LogCapture.scrWarnings()) {
      new Demo(new PrintStream(bytes, true, StandardCharsets.UTF_8), options, socketBase).run();
      warnings = captured.all();
    }
    String table = bytes.toString(StandardCharsets.UTF_8);

    // Units and labels render under any locale (LC_ALL=C included): ASCII only.
    for (int i = 0; i < table.length(); i++) {
      assertTrue(table.charAt(i) < 128, "not ASCII at " + i + ": " + table);
    }
    // No WARN of the demo's own making: not the shared-engine one, not the test shim plugin's
    // trust.
    assertTrue(
        warnings.stream().noneMatch(w -> w.contains("already exists with other settings")),
        warnings.toString());
    if (socketBase != null) {
      assertEquals(List.of(), warnings, "the demo logs no scr WARN");
    }

    Matcher rows = ROW.matcher(table);
    Set<String> measured = new HashSet<>();
    while (rows.find()) {
      String label = rows.group(1).trim();
      measured.add(label);
      long ops = Long.parseLong(rows.group(2).replace(",", ""));
      assertTrue(ops > 0, table);
      int shortCircuitPercent = Integer.parseInt(rows.group(3));
      assertEquals(label.equals("stock HDFS, TCP") ? 0 : 100, shortCircuitPercent, table);
    }
    for (Demo.ReadPath path : Demo.ReadPath.values()) {
      assertTrue(measured.contains(path.label), path.label + " not measured:\n" + table);
    }

    Matcher counters = COUNTERS.matcher(table);
    Set<String> counted = new HashSet<>();
    while (counters.find()) {
      counted.add(counters.group(1).trim());
      long hits = Long.parseLong(counters.group(2).replace(",", ""));
      long misses = Long.parseLong(counters.group(3).replace(",", ""));
      // 4 blocks, read over and over: a few misses, then hits.
      assertTrue(misses >= 1 && misses <= 16 && hits > 100 * misses, table);
      assertTrue(Integer.parseInt(counters.group(6)) >= 1, "segments mapped: " + table);
      assertEquals(0, Long.parseLong(counters.group(8).replace(",", "")), "fallbacks: " + table);
    }
    for (Demo.ReadPath path : Demo.ReadPath.values()) {
      assertEquals(path.type.isScr(), counted.contains(path.label), path.label + ":\n" + table);
    }
  }

  @Test
  void rejectsBadOptionsWithTheReason() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Demo.Options.parse(new String[] {"--seconds", "zero"}));
    assertTrue(e.getMessage().contains("--seconds expects a number"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Demo.Options.parse(new String[] {"--bogus", "1"}));
    assertTrue(e.getMessage().contains("unknown option --bogus"), e.getMessage());
  }
}
