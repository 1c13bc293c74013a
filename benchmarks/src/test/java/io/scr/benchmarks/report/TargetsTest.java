package io.scr.benchmarks.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class TargetsTest {
  private static String row(String method, String path, int threads, String extra, double score) {
    return """
        { "benchmark" : "io.scr.benchmarks.read.%s", "mode" : "avgt", "threads" : %d,
          "params" : { "path" : "%s" %s },
          "primaryMetric" : { "score" : %s, "scoreError" : 0.1, "scoreUnit" : "us/op" %s },
          "secondaryMetrics" : { %s } }
        """
        .formatted(
            method,
            threads,
            path,
            method.startsWith("PreadBenchmark") ? ", \"readSize\" : \"4096\"" : "",
            score,
            method.startsWith("ReplicaOpen")
                ? ", \"scorePercentiles\" : { \"50.0\" : 40.0, \"99.0\" : " + extra + " }"
                : "",
            method.startsWith("Odyssey")
                ? extra
                : "\"gc.alloc.rate.norm\" : { \"score\" : "
                    + (path.equals("RAW_PREAD") ? 6 : 2)
                    + ", \"scoreUnit\" : \"B/op\" }");
  }

  private static final String JSON =
      "["
          + String.join(
              ",",
              row("PreadBenchmark.pread_t1", "RAW_PREAD", 1, "", 2.0),
              row("PreadBenchmark.pread_t1", "SCR_FILESYSTEM", 1, "", 2.8), // 1.4x raw: met
              row("PreadBenchmark.pread_t1", "STOCK_SCR_TUNED", 1, "", 9.8), // 3.5x: met
              row("PreadBenchmark.pread_t1", "STOCK_SCR_HBASE", 1, "", 14.0), // 5x: missed
              row("PreadBenchmark.pread_t2", "SCR_FILESYSTEM", 2, "", 2.8), // 2x throughput
              row("PreadBenchmark.pread_t32", "SCR_FILESYSTEM", 32, "", 64.0), // 0.25x: missed
              row("ScanBenchmark.scan1m", "RAW_PREAD", 1, "", 100.0),
              row("ScanBenchmark.scan1m", "SCR_FILESYSTEM", 1, "", 110.0), // 0.91x: met
              row("ReplicaOpenBenchmark.firstRead_t8", "SCR_FILESYSTEM", 8, "250.0", 60.0),
              row(
                  "OdysseyBenchmark.pread4k",
                  "SCR_FILESYSTEM",
                  4,
                  "\"lookups\" : { \"score\" : 10000.0 }, \"misses\" : { \"score\" : 50.0 }",
                  1e5),
              row(
                  "OdysseyBenchmark.pread4k",
                  "STOCK_SCR_DEFAULT",
                  4,
                  "\"lookups\" : { \"score\" : 1000.0 }, \"misses\" : { \"score\" : 750.0 }",
                  1e4),
              """
              { "benchmark" : "io.scr.benchmarks.read.PreadPairBenchmark.pair", "mode" : "avgt",
                "threads" : 2, "params" : { "path" : "SCR_FILESYSTEM", "readSize" : "4096" },
                "primaryMetric" : { "score" : 1.56, "scoreError" : 0.1, "scoreUnit" : "us/op" },
                "secondaryMetrics" : { "raw" : { "score" : 1.2 }, "scr" : { "score" : 1.92 } } }
              """)
          + "]";

  @Test
  void computesEachTargetAsARatioOfOneRunAndJudgesIt() throws Exception {
    Map<String, Targets.Target> byName =
        Targets.evaluate(BenchReport.parse(JSON)).stream()
            .collect(Collectors.toMap(Targets.Target::name, t -> t));
    Targets.Target raw =
        byName.get("random 4 KiB pread, 1 thread: SCR_FILESYSTEM time / RAW_PREAD time");
    assertEquals(1.4, raw.measured(), 1e-9);
    assertEquals("met", raw.status());
    Targets.Target pair =
        byName.get(
            "random 4 KiB pread, side by side with RAW_PREAD in one fork: SCR_FILESYSTEM / RAW_PREAD");
    assertEquals(1.6, pair.measured(), 1e-9);
    assertEquals("**missed**", pair.status());
    assertEquals(
        "not measured",
        byName
            .get(
                "random 4 KiB pread, side by side with RAW_PREAD in one fork: SCR_ACCESSOR /"
                    + " RAW_PREAD")
            .status());
    assertEquals(
        "met", byName.get("random 4 KiB pread, 1 thread: speed-up over STOCK_SCR_TUNED").status());
    Targets.Target hbase =
        byName.get("random 4 KiB pread, 1 thread: speed-up over STOCK_SCR_HBASE");
    assertEquals(5.0, hbase.measured(), 1e-9);
    assertEquals("**missed**", hbase.status());
    assertEquals(
        2.0,
        byName.get("random 4 KiB pread, SCR_FILESYSTEM: 2-thread / 1-thread throughput").measured(),
        1e-9);
    assertEquals(
        "**missed**",
        byName.get("random 4 KiB pread, SCR_FILESYSTEM: 32-thread / 2-thread throughput").status());
    assertEquals(
        "met",
        byName.get("sequential scan, 1 MiB reads: SCR_FILESYSTEM / RAW_PREAD throughput").status());
    Targets.Target open = byName.get("replica open, 8 threads: SCR_FILESYSTEM p99");
    assertEquals(250.0, open.measured(), 1e-9);
    assertEquals("met", open.status());
    assertEquals(
        "not measured", byName.get("replica open, 8 threads: SCR_FILESYSTEM_SHIM p99").status());
    Targets.Target odyssey =
        byName.get("odyssey (working set 1024 blocks): SCR_FILESYSTEM replica cache hit rate");
    assertEquals(99.5, odyssey.measured(), 1e-9);
    assertTrue(odyssey.basis().contains("STOCK_SCR_DEFAULT hit rate: 25.0%"), odyssey.basis());
    Targets.Target alloc =
        byName.get("random 4 KiB pread, 1 thread: SCR_FILESYSTEM bytes allocated per read");
    assertEquals(2.0, alloc.measured(), 1e-9);
    assertEquals("met", alloc.status());
  }

  @Test
  void judgesRemoteReadsAgainstStockTcpInTheSameForkAndFdRequestsPerBlock() throws Exception {
    String json =
        """
        [ { "benchmark" : "io.scr.benchmarks.read.RemoteReadBenchmark.pair", "mode" : "avgt",
            "threads" : 2, "params" : { "path" : "SCR_ACCESSOR", "readSize" : "4096" },
            "primaryMetric" : { "score" : 300.0, "scoreError" : 1, "scoreUnit" : "us/op" },
            "secondaryMetrics" : { "stock" : { "score" : 290.0 }, "scr" : { "score" : 310.0 } } },
          { "benchmark" : "io.scr.benchmarks.read.RemoteReadBenchmark.pair", "mode" : "avgt",
            "threads" : 2, "params" : { "path" : "SCR_FILESYSTEM", "readSize" : "4096" },
            "primaryMetric" : { "score" : 300.0, "scoreError" : 1, "scoreUnit" : "us/op" },
            "secondaryMetrics" : { "stock" : { "score" : 300.0 }, "scr" : { "score" : 303.0 } } },
          { "benchmark" : "io.scr.benchmarks.read.RemoteReadBenchmark.pread", "mode" : "avgt",
            "threads" : 1, "params" : { "path" : "SCR_ACCESSOR", "readSize" : "4096" },
            "primaryMetric" : { "score" : 300.0, "scoreError" : 1, "scoreUnit" : "us/op" },
            "secondaryMetrics" : { "fdRequests" : { "score" : 8.0 } } } ]
        """;
    Map<String, Targets.Target> byName =
        Targets.evaluate(BenchReport.parse(json)).stream()
            .collect(Collectors.toMap(Targets.Target::name, t -> t));
    String prefix =
        "remote blocks (only on a DataNode whose socket the client lacks), random 4 KiB pread, side"
            + " by side with STOCK_TCP in one fork: ";
    Targets.Target accessor = byName.get(prefix + "SCR_ACCESSOR / STOCK_TCP");
    assertEquals(310.0 / 290.0, accessor.measured(), 1e-9);
    assertEquals("**missed**", accessor.status(), "1.069x > 1.05x");
    assertEquals("met", byName.get(prefix + "SCR_FILESYSTEM / STOCK_TCP").status());
    assertEquals("not measured", byName.get(prefix + "SCR_ACCESSOR_SHIM / STOCK_TCP").status());
    Targets.Target requests =
        byName.get(
            "remote blocks: fd requests to the local DataNode per block while measuring,"
                + " SCR_ACCESSOR");
    assertEquals(2.0, requests.measured(), 1e-9);
    assertEquals("**missed**", requests.status());
  }

  @Test
  void rendersAMarkdownRowPerTargetAndNeverCallsMissingResultsMet() throws Exception {
    String md = Targets.render(List.of());
    assertEquals(Targets.evaluate(List.of()).size() + 2, md.split("\n").length, md);
    assertTrue(!md.contains("| met |") && md.contains("| not measured |"), md);
    String full = Targets.render(BenchReport.parse(JSON));
    assertTrue(full.contains("| 1.40 x | ≤ 1.50 x | met |"), full);
    assertTrue(full.contains("| 5.00 x | ≥ 8.00 x | **missed** |"), full);
  }

  @Test
  void foldsThreadSuffixedMethodsIntoOneGroup() throws Exception {
    List<BenchReport.Row> rows = BenchReport.parse(JSON);
    assertEquals("PreadBenchmark.pread", rows.get(5).group());
    assertEquals("32 threads, readSize=4096", rows.get(5).category());
    assertEquals(250.0, rows.get(8).percentile(99));
  }
}
