package io.scr.benchmarks.report;

import io.scr.benchmarks.report.BenchReport.Row;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * scr's speed and memory targets, each computed from results of one run as a ratio (or a figure)
 * and compared with its goal. A target whose results are missing is reported as not measured, never
 * as met.
 */
final class Targets {
  private Targets() {}

  /** Whether a larger or a smaller measured value is better. */
  enum Direction {
    AT_LEAST("≥"),
    AT_MOST("≤");

    final String symbol;

    Direction(String symbol) {
      this.symbol = symbol;
    }

    boolean met(double measured, double goal) {
      return this == AT_LEAST ? measured >= goal : measured <= goal;
    }
  }

  /** One evaluated target: {@code measured} is NaN when its results are missing. */
  record Target(
      String name, double measured, String unit, Direction direction, double goal, String basis) {
    String status() {
      if (Double.isNaN(measured)) {
        return "not measured";
      }
      return direction.met(measured, goal) ? "met" : "**missed**";
    }
  }

  static final String PREAD = "PreadBenchmark.pread";
  static final String PAIR = "PreadPairBenchmark.pair";
  static final String SCAN = "ScanBenchmark.scan1m";
  static final String OPEN = "ReplicaOpenBenchmark.firstRead";
  static final String ODYSSEY = "OdysseyBenchmark.pread4k";
  static final String REMOTE_PAIR = "RemoteReadBenchmark.pair";
  static final String REMOTE = "RemoteReadBenchmark.pread";

  /** Blocks of the {@link #REMOTE} file ({@code RemoteReadBenchmark.BLOCKS}). */
  static final int REMOTE_BLOCKS = 4;

  /** Evaluates every target against {@code rows}. */
  static List<Target> evaluate(List<Row> rows) {
    List<Target> out = new ArrayList<>();
    double raw = score(rows, PREAD, "RAW_PREAD", 1, "4096");
    double scr = score(rows, PREAD, "SCR_FILESYSTEM", 1, "4096");
    double tuned = score(rows, PREAD, "STOCK_SCR_TUNED", 1, "4096");
    double hbase = score(rows, PREAD, "STOCK_SCR_HBASE", 1, "4096");
    out.add(
        new Target(
            "random 4 KiB pread, 1 thread: SCR_FILESYSTEM time / RAW_PREAD time",
            scr / raw,
            "x",
            Direction.AT_MOST,
            1.5,
            "µs/op ratio, " + PREAD));
    for (String path : new String[] {"SCR_FILESYSTEM", "SCR_FILESYSTEM_SHIM"}) {
      out.add(pairTarget(rows, path, 1.5));
    }
    for (String path : new String[] {"SCR_ACCESSOR", "SCR_ACCESSOR_SHIM"}) {
      out.add(pairTarget(rows, path, 3));
    }
    out.add(
        new Target(
            "random 4 KiB pread, 1 thread: speed-up over STOCK_SCR_TUNED",
            tuned / scr,
            "x",
            Direction.AT_LEAST,
            2.5,
            "STOCK_SCR_TUNED µs/op / SCR_FILESYSTEM µs/op"));
    out.add(
        new Target(
            "random 4 KiB pread, 1 thread: speed-up over STOCK_SCR_HBASE",
            hbase / scr,
            "x",
            Direction.AT_LEAST,
            8,
            "STOCK_SCR_HBASE µs/op / SCR_FILESYSTEM µs/op"));
    double t1 = throughput(rows, "SCR_FILESYSTEM", 1);
    double t2 = throughput(rows, "SCR_FILESYSTEM", 2);
    double t32 = throughput(rows, "SCR_FILESYSTEM", 32);
    out.add(
        new Target(
            "random 4 KiB pread, SCR_FILESYSTEM: 2-thread / 1-thread throughput",
            t2 / t1,
            "x",
            Direction.AT_LEAST,
            1.7,
            "throughput = threads / µs per op"));
    out.add(
        new Target(
            "random 4 KiB pread, SCR_FILESYSTEM: 32-thread / 2-thread throughput",
            t32 / t2,
            "x",
            Direction.AT_LEAST,
            0.9,
            "throughput = threads / µs per op"));
    out.add(
        new Target(
            "sequential scan, 1 MiB reads: SCR_FILESYSTEM / RAW_PREAD throughput",
            score(rows, SCAN, "RAW_PREAD", 1, null) / score(rows, SCAN, "SCR_FILESYSTEM", 1, null),
            "x",
            Direction.AT_LEAST,
            0.8,
            "RAW_PREAD µs/op / SCR_FILESYSTEM µs/op, " + SCAN));
    for (String path : List.of("SCR_FILESYSTEM", "SCR_FILESYSTEM_SHIM")) {
      out.add(
          new Target(
              "replica open, 8 threads: " + path + " p99",
              find(rows, OPEN, path, 8, null).map(r -> r.percentile(99)).orElse(Double.NaN),
              "µs",
              Direction.AT_MOST,
              300,
              "first read of a never-read block, SampleTime; stock p50/p99 in the table below"));
    }
    out.add(
        new Target(
            "odyssey (working set 1024 blocks): SCR_FILESYSTEM replica cache hit rate",
            hitRate(rows, "SCR_FILESYSTEM"),
            "%",
            Direction.AT_LEAST,
            99,
            "scr defaults; STOCK_SCR_DEFAULT hit rate: "
                + fmtPercent(hitRate(rows, "STOCK_SCR_DEFAULT"))
                + ", STOCK_SCR_TUNED: "
                + fmtPercent(hitRate(rows, "STOCK_SCR_TUNED"))));
    out.add(
        new Target(
            "random 4 KiB pread, 1 thread: SCR_FILESYSTEM bytes allocated per read",
            find(rows, PREAD, "SCR_FILESYSTEM", 1, "4096")
                .map(r -> r.allocBytesPerOp() == null ? Double.NaN : r.allocBytesPerOp())
                .orElse(Double.NaN),
            "B/op",
            Direction.AT_MOST,
            16,
            "gc.alloc.rate.norm, whole JVM (the in-process DataNode included); RAW_PREAD: "
                + find(rows, PREAD, "RAW_PREAD", 1, "4096")
                    .map(
                        r ->
                            r.allocBytesPerOp() == null
                                ? "—"
                                : BenchReport.fmt(r.allocBytesPerOp()))
                    .orElse("—")
                + " B/op"));
    for (String path :
        List.of("SCR_ACCESSOR", "SCR_FILESYSTEM", "SCR_ACCESSOR_SHIM", "SCR_FILESYSTEM_SHIM")) {
      out.add(remotePairTarget(rows, path));
    }
    for (String path :
        List.of("SCR_ACCESSOR", "SCR_FILESYSTEM", "SCR_ACCESSOR_SHIM", "SCR_FILESYSTEM_SHIM")) {
      out.add(
          new Target(
              "remote blocks: fd requests to the local DataNode per block while measuring, " + path,
              find(rows, REMOTE, path, 1, "4096")
                  .map(r -> r.secondaryScore("fdRequests") / REMOTE_BLOCKS)
                  .orElse(Double.NaN),
              "requests",
              Direction.AT_MOST,
              1,
              "secondary fdRequests of "
                  + REMOTE
                  + " (DataNode 0's BlocksGetLocalPathInfo, summed over iterations and forks)"
                  + " / "
                  + REMOTE_BLOCKS
                  + " blocks; a trial fails if asked more than once per block overall"));
    }
    return out;
  }

  /**
   * {@code pair:scr / pair:stock} of the last {@link #REMOTE_PAIR} result for {@code path}; the
   * basis quotes the same ratio for {@code STOCK_TCP} (stock beside stock), the pairing's noise.
   */
  private static Target remotePairTarget(List<Row> rows, String path) {
    double ratio = remotePairRatio(rows, path);
    double control = remotePairRatio(rows, "STOCK_TCP");
    return new Target(
        "remote blocks (only on a DataNode whose socket the client lacks), random 4 KiB pread, side"
            + " by side with STOCK_TCP in one fork: "
            + path
            + " / STOCK_TCP",
        ratio,
        "x",
        Direction.AT_MOST,
        1.05,
        "pair:scr / pair:stock µs/op, "
            + REMOTE_PAIR
            + "; the same ratio for STOCK_TCP beside itself (noise): "
            + (Double.isNaN(control) ? "not measured" : BenchReport.fmt(control) + " x"));
  }

  private static double remotePairRatio(List<Row> rows, String path) {
    return rows.stream()
        .filter(r -> r.group().equals(REMOTE_PAIR) && r.adapter().equals(path))
        .reduce((a, b) -> b)
        .map(r -> r.secondaryScore("scr") / r.secondaryScore("stock"))
        .orElse(Double.NaN);
  }

  /** The Markdown table of {@link #evaluate}. */
  static String render(List<Row> rows) {
    StringBuilder md =
        new StringBuilder(
            "| target | measured | goal | status | basis |\n|---|---:|---:|---|---|\n");
    for (Target t : evaluate(rows)) {
      md.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s %s %s | %s | %s |%n",
              t.name(),
              Double.isNaN(t.measured()) ? "—" : BenchReport.fmt(t.measured()) + " " + t.unit(),
              t.direction().symbol,
              BenchReport.fmt(t.goal()),
              t.unit(),
              t.status(),
              t.basis()));
    }
    return md.toString();
  }

  static Optional<Row> find(
      List<Row> rows, String group, String adapter, int threads, String readSize) {
    Predicate<Row> size = r -> readSize == null || readSize.equals(r.params().get("readSize"));
    return rows.stream()
        .filter(r -> r.group().equals(group))
        .filter(r -> r.adapter().equals(adapter))
        .filter(r -> r.threads() == threads)
        .filter(size)
        .reduce((a, b) -> b); // the last result wins, as in the merged store
  }

  private static double score(
      List<Row> rows, String group, String adapter, int threads, String readSize) {
    return find(rows, group, adapter, threads, readSize).map(Row::score).orElse(Double.NaN);
  }

  /** Reads per µs of all threads together: {@code threads / (µs per read per thread)}. */
  private static double throughput(List<Row> rows, String adapter, int threads) {
    return threads / score(rows, PREAD, adapter, threads, "4096");
  }

  /** {@code pair:scr / pair:raw} of the last {@link #PAIR} result for {@code path}, judged. */
  private static Target pairTarget(List<Row> rows, String path, double goal) {
    double ratio =
        rows.stream()
            .filter(r -> r.group().equals(PAIR) && r.adapter().equals(path))
            .reduce((a, b) -> b)
            .map(r -> r.secondaryScore("scr") / r.secondaryScore("raw"))
            .orElse(Double.NaN);
    return new Target(
        "random 4 KiB pread, side by side with RAW_PREAD in one fork: " + path + " / RAW_PREAD",
        ratio,
        "x",
        Direction.AT_MOST,
        goal,
        "pair:scr / pair:raw µs/op, " + PAIR + " (one fork: its speed cancels out)");
  }

  private static double hitRate(List<Row> rows, String adapter) {
    Optional<Row> r =
        rows.stream()
            .filter(x -> x.group().equals(ODYSSEY))
            .filter(x -> x.adapter().equals(adapter))
            .reduce((a, b) -> b);
    if (r.isEmpty()) {
      return Double.NaN;
    }
    double lookups = r.get().secondaryScore("lookups");
    double misses = r.get().secondaryScore("misses");
    return lookups > 0 ? 100.0 * (1 - misses / lookups) : Double.NaN;
  }

  private static String fmtPercent(double v) {
    return Double.isNaN(v) ? "not measured" : String.format(Locale.ROOT, "%.1f%%", v);
  }
}
