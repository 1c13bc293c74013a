package io.scr.benchmarks.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's arithmetic: medians, ratios within a round, verdicts, checks, JSON. */
class HBaseBenchReportTest {
  private static ModeRun run(Mode m, int round, double p50, double p99) {
    ModeRun r = new ModeRun();
    r.mode = m;
    r.round = round;
    r.gets = 1000;
    r.p50 = p50;
    r.p99 = p99;
    r.opsPerSecond = 1e6 / p50;
    r.hdfsPreads = m.blockCache ? 0 : 1000;
    if (m.isScr()) {
      r.scrReads = 1000;
      r.scrBytes = 65_536_000;
    }
    return r;
  }

  private static HBaseBenchReport report(double[] stock, double[] scr) {
    HBaseBenchReport rep =
        new HBaseBenchReport(Shape.smoke().with(3000, 300, 1000, 3, 1 << 18), "2026-01-01T00:00Z");
    for (int i = 0; i < stock.length; i++) {
      rep.add(run(Mode.STOCK_SCR, i, stock[i], stock[i] * 3));
      rep.add(run(Mode.SCR_FS_SHIM_DN, i, scr[i], scr[i] * 3));
    }
    return rep;
  }

  @Test
  void ratiosAreTakenWithinEachRound() {
    // a slow round for both: within-round ratios stay 0.5 although the medians' ratio is not
    HBaseBenchReport rep = report(new double[] {400, 1000, 420}, new double[] {200, 500, 210});
    HBaseBenchReport.Spread r = rep.ratio(Mode.SCR_FS_SHIM_DN, Mode.STOCK_SCR, x -> x.p50);
    assertEquals(0.5, r.min, 1e-9);
    assertEquals(0.5, r.max, 1e-9);
    assertEquals("met", HBaseBenchReport.verdict(r, 0.7));
    assertTrue(rep.markdown().contains("p50 met, p99 met"), rep.markdown());
  }

  @Test
  void aSpreadAcrossTheTargetIsNotResolved() {
    HBaseBenchReport rep = report(new double[] {400, 400, 400}, new double[] {200, 300, 360});
    HBaseBenchReport.Spread r = rep.ratio(Mode.SCR_FS_SHIM_DN, Mode.STOCK_SCR, x -> x.p50);
    assertEquals(0.75, r.median, 1e-9);
    assertEquals("not resolved", HBaseBenchReport.verdict(r, 0.7));
    assertEquals(
        "missed",
        HBaseBenchReport.verdict(
            report(new double[] {400, 400, 400}, new double[] {300, 320, 360})
                .ratio(Mode.SCR_FS_SHIM_DN, Mode.STOCK_SCR, x -> x.p50),
            0.7));
  }

  @Test
  void checksNameEveryModeThatReadOtherwiseThanClaimed() {
    HBaseBenchReport rep = report(new double[] {400, 400, 400}, new double[] {200, 200, 200});
    assertEquals(List.of(), rep.problems());
    ModeRun leaky = run(Mode.ACCESSOR_SHIM_DN, 0, 300, 900);
    leaky.dataNodeBytesRead = 65_536; // one block over TCP
    rep.add(leaky);
    ModeRun floor = run(Mode.FLOOR, 0, 100, 300);
    floor.hdfsPreads = 500; // half the gets read HDFS
    rep.add(floor);
    List<String> problems = rep.problems();
    assertTrue(
        problems.stream().anyMatch(p -> p.startsWith("ACCESSOR_SHIM_DN round 0: 99.90 %")),
        problems.toString());
    assertTrue(
        problems.stream().anyMatch(p -> p.startsWith("FLOOR round 0: the floor read HDFS")),
        problems.toString());
    assertTrue(
        problems.stream().anyMatch(p -> p.equals("ACCESSOR_SHIM_DN round 1: did not run")),
        problems.toString());
  }

  @Test
  void jsonReadsBack(@TempDir Path dir) throws Exception {
    HBaseBenchReport rep = report(new double[] {400, 410, 420}, new double[] {200, 210, 220});
    Path f = dir.resolve("r.json");
    rep.writeJson(f);
    assertTrue(Files.size(f) > 0);
    HBaseBenchReport back = HBaseBenchReport.readJson(f);
    assertEquals(rep.markdown(), back.markdown());
    assertEquals(List.of(Mode.STOCK_SCR, Mode.SCR_FS_SHIM_DN), back.modes());
  }
}
