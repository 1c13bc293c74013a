package io.scr.benchmarks.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Keeps the README's {@code ./scr demo} honest: it runs, reads every path and prints figures. */
class DemoTest {
  private static final Pattern ROW =
      Pattern.compile(
          "(?m)^(stock HDFS, TCP|stock short-circuit, 128 KiB buffer)\\s+([\\d,]+) .*"
              + "\\s(\\d+)%$");

  @Test
  void printsMeasuredRowsForStockPaths() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Demo.Options options =
        Demo.Options.parse(
            new String[] {"--seconds", "0.3", "--file-mib", "4", "--block-kib", "1024"});
    new Demo(new PrintStream(bytes, true, StandardCharsets.UTF_8), options).run();
    String table = bytes.toString(StandardCharsets.UTF_8);

    Matcher rows = ROW.matcher(table);
    int found = 0;
    while (rows.find()) {
      found++;
      long ops = Long.parseLong(rows.group(2).replace(",", ""));
      assertTrue(ops > 0, table);
      int shortCircuitPercent = Integer.parseInt(rows.group(3));
      assertEquals(rows.group(1).startsWith("stock HDFS, TCP") ? 0 : 100, shortCircuitPercent);
    }
    assertEquals(2, found, table);
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
