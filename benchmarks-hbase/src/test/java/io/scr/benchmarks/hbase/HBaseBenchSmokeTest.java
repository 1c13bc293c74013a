package io.scr.benchmarks.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code ./scr bench hbase --smoke} as the build runs it: a NameNode, a DataNode and HBase as
 * processes, PerformanceEvaluation's random gets and scan in every mode, one round over a few
 * thousand rows. Nothing is timed; it checks what makes the benchmark's figures mean anything:
 * every mode ran its gets, every HDFS mode read HDFS on every get and the floor did not, every scr
 * mode read 100 % short-circuit, and the report reads back from its JSON.
 */
class HBaseBenchSmokeTest {
  @Test
  void everyModeRunsAndEveryScrModeReadsOnlyShortCircuit() throws Exception {
    Path dir = Files.createDirectories(Path.of(System.getProperty("java.io.tmpdir")));
    Path json = dir.resolve("hbase-bench-smoke.json");
    HBaseBench.Options o =
        HBaseBench.Options.parse(
            new String[] {
              "--smoke", "--native", System.getProperty("scr.native.dir"), "--json", json.toString()
            });
    HBaseBench.run(o).writeJson(json);

    HBaseBenchReport report = HBaseBenchReport.readJson(json);
    assertEquals(EnumSet.allOf(Mode.class), EnumSet.copyOf(report.modes()));
    assertEquals(List.of(), report.problems(), report.markdown());
    for (ModeRun r : report.runs()) {
      assertTrue(r.gets >= 950, r.mode + " measured " + r.gets + " gets");
      assertTrue(r.scanRowsPerSecond > 0, r.mode + " scanned nothing");
      if (r.mode.isScr()) {
        assertEquals(0, r.scrFallbacks, r.mode + ": reads handed to stock");
        assertEquals(0, r.dataNodeBytesRead, r.mode + ": bytes over the DataNode's TCP port");
        assertTrue(r.scrReads >= r.gets, r.mode + ": " + r.scrReads + " scr reads");
      } else {
        assertEquals(0, r.scrReads, r.mode + " read through scr");
      }
    }
    ModeRun tcp =
        report.runs().stream().filter(r -> r.mode == Mode.STOCK_TCP).findFirst().orElseThrow();
    assertTrue(tcp.dataNodeBytesRead >= tcp.gets * 1024L, "stock TCP read over TCP");
    String md = report.markdown();
    for (Mode m : Mode.values()) {
      assertTrue(md.contains("| " + m.label + " |"), m.label + " missing from\n" + md);
    }
  }
}
