package io.scr.benchmarks.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchReportTest {
  /** Two rows in JMH's -rf json shape: one adapter parameter, gc profiler on. */
  private static final String JSON =
      """
      [ {
          "benchmark" : "io.scr.benchmarks.cache.LeaseBenchmark.leaseHit",
          "mode" : "avgt", "threads" : 8, "forks" : 1,
          "params" : { "cacheType" : "SCR_LEASE_CACHE", "keys" : "1024" },
          "primaryMetric" : { "score" : 41.5, "scoreError" : 2.25, "scoreUnit" : "ns/op" },
          "secondaryMetrics" : { "gc.alloc.rate.norm" : { "score" : 0.004, "scoreUnit" : "B/op" } }
        }, {
          "benchmark" : "io.scr.benchmarks.cache.LeaseBenchmark.leaseHit",
          "mode" : "avgt", "threads" : 8, "forks" : 1,
          "params" : { "cacheType" : "STOCK_LIKE_SINGLE_LOCK", "keys" : "1024" },
          "primaryMetric" : { "score" : 1234.5, "scoreError" : 99.0, "scoreUnit" : "ns/op" },
          "secondaryMetrics" : { }
      } ]
      """;

  @Test
  void parsesScoresParamsAndAllocation() throws Exception {
    List<BenchReport.Row> rows = BenchReport.parse(JSON);
    assertEquals(2, rows.size());
    BenchReport.Row ours = rows.get(0);
    assertEquals("LeaseBenchmark.leaseHit", ours.group());
    assertEquals("SCR_LEASE_CACHE", ours.adapter());
    assertEquals("8 threads, keys=1024", ours.category());
    assertEquals(41.5, ours.score());
    assertEquals(0.004, ours.allocBytesPerOp());
    assertEquals(null, rows.get(1).allocBytesPerOp());
  }

  @Test
  void mergeReplacesTheSameResultAndKeepsOthers(@TempDir Path dir) throws Exception {
    Path store = dir.resolve("results.json");
    Path first = Files.writeString(dir.resolve("a.json"), JSON);
    Path second = Files.writeString(dir.resolve("b.json"), JSON.replace("41.5", "40.0"));
    BenchReport.merge(store, List.of(first));
    BenchReport.merge(store, List.of(second));
    List<BenchReport.Row> rows = BenchReport.parse(Files.readString(store));
    assertEquals(2, rows.size());
    assertEquals(
        40.0,
        rows.stream().filter(r -> r.adapter().equals("SCR_LEASE_CACHE")).findFirst().get().score());
  }

  @Test
  void rendersTableAndChartAndKeepsHandWrittenText(@TempDir Path dir) throws Exception {
    Path doc = dir.resolve("benchmarks.md");
    Files.writeString(
        doc,
        "# Benchmarks\n\nhand-written method\n\n"
            + BenchReport.BEGIN
            + "\nold results\n"
            + BenchReport.END
            + "\n\nhand-written analysis\n");
    Path json = Files.writeString(dir.resolve("r.json"), JSON);

    BenchReport.main(
        new String[] {
          "--doc", doc.toString(), "--charts", dir.resolve("charts").toString(), json.toString()
        });

    String out = Files.readString(doc);
    assertTrue(out.contains("hand-written method") && out.contains("hand-written analysis"), out);
    assertTrue(!out.contains("old results"), out);
    assertTrue(
        out.contains("| SCR_LEASE_CACHE | 8 threads, keys=1024 | 41.5 | 2.25 | 0.00400 |"), out);
    assertTrue(
        out.contains("| STOCK_LIKE_SINGLE_LOCK | 8 threads, keys=1024 | 1,235 | 99.0 | — |"), out);
    Path png = dir.resolve("charts/LeaseBenchmark.leaseHit.png");
    assertTrue(Files.size(png) > 1000, "chart missing: " + png);
    assertTrue(out.contains("](charts/LeaseBenchmark.leaseHit.png)"), out);
  }
}
