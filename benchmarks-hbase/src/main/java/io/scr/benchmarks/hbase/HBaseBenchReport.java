package io.scr.benchmarks.hbase;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * The results of one {@link HBaseBench} run and what they say: per mode the median round's p50,
 * p99 and gets/s with the min-max over rounds, each mode's ratio to stock short-circuit reads
 * within each round, a verdict per target that says "not resolved" when the rounds disagree, and
 * the checks that make the figures mean what they claim (every HDFS mode reads HDFS on every get,
 * the floor does not, every scr mode reads 100 % short-circuit). JSON in and out, a markdown
 * section for {@code docs/benchmarks.md} and a chart.
 *
 * <p>Not thread-safe.
 */
public final class HBaseBenchReport {
  private static final ObjectMapper JSON =
      new ObjectMapper()
          .setVisibility(PropertyAccessor.ALL, JsonAutoDetect.Visibility.NONE)
          .setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.PUBLIC_ONLY)
          .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
          .enable(SerializationFeature.INDENT_OUTPUT);

  /** The JSON form. */
  public static final class Data {
    public String shape;
    public int rows;
    public int valueSize;
    public long blockSize;
    public int warmupGets;
    public int gets;
    public int rounds;
    public double target;
    public String started;
    public int cores;
    public List<ModeRun> runs = new ArrayList<>();
  }

  private final Data data;

  HBaseBenchReport(Shape shape, String started) {
    data = new Data();
    data.shape = shape.name;
    data.rows = shape.rows;
    data.valueSize = shape.valueSize;
    data.blockSize = shape.blockSize;
    data.warmupGets = shape.warmupGets;
    data.gets = shape.gets;
    data.rounds = shape.rounds;
    data.target = shape.target;
    data.started = started;
    data.cores = Runtime.getRuntime().availableProcessors();
  }

  private HBaseBenchReport(Data data) {
    this.data = data;
  }

  /** Reads a report written by {@link #writeJson}. */
  public static HBaseBenchReport readJson(Path file) throws IOException {
    return new HBaseBenchReport(JSON.readValue(file.toFile(), Data.class));
  }

  public void writeJson(Path file) throws IOException {
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    JSON.writeValue(file.toFile(), data);
  }

  void add(ModeRun r) {
    data.runs.add(r);
  }

  public List<ModeRun> runs() {
    return List.copyOf(data.runs);
  }

  /** The modes measured, in the order of the first round. */
  public List<Mode> modes() {
    List<Mode> out = new ArrayList<>();
    for (ModeRun r : data.runs) {
      if (!out.contains(r.mode)) {
        out.add(r.mode);
      }
    }
    out.sort(null);
    return out;
  }

  private List<ModeRun> of(Mode m) {
    List<ModeRun> out = new ArrayList<>();
    for (ModeRun r : data.runs) {
      if (r.mode == m) {
        out.add(r);
      }
    }
    return out;
  }

  private ModeRun in(Mode m, int round) {
    for (ModeRun r : data.runs) {
      if (r.mode == m && r.round == round) {
        return r;
      }
    }
    return null;
  }

  /** Median, min and max. */
  static final class Spread {
    final double median;
    final double min;
    final double max;

    Spread(double[] v) {
      double[] s = v.clone();
      Arrays.sort(s);
      int n = s.length;
      median = n == 0 ? Double.NaN : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
      min = n == 0 ? Double.NaN : s[0];
      max = n == 0 ? Double.NaN : s[n - 1];
    }
  }

  Spread spread(Mode m, ToDoubleFunction<ModeRun> f) {
    return new Spread(of(m).stream().mapToDouble(f).toArray());
  }

  /** {@code m}'s figure over {@code base}'s within each round that ran both. */
  Spread ratio(Mode m, Mode base, ToDoubleFunction<ModeRun> f) {
    List<Double> v = new ArrayList<>();
    for (ModeRun r : of(m)) {
      ModeRun b = in(base, r.round);
      if (b != null && f.applyAsDouble(b) > 0) {
        v.add(f.applyAsDouble(r) / f.applyAsDouble(b));
      }
    }
    return new Spread(v.stream().mapToDouble(Double::doubleValue).toArray());
  }

  /**
   * "met" when every round's ratio is at most the target, "missed" when every round's is above it,
   * otherwise "not resolved": the rounds' spread is larger than the distance to the target.
   */
  static String verdict(Spread ratio, double target) {
    if (Double.isNaN(ratio.median)) {
      return "not measured";
    }
    if (ratio.max <= target) {
      return "met";
    }
    if (ratio.min > target) {
      return "missed";
    }
    return "not resolved";
  }

  /**
   * What makes the figures mean what they claim; empty when all hold. Every mode completed its
   * gets in every round; every HDFS mode read a block from HDFS per get, the floor nearly none;
   * every scr mode read 100 % of its HDFS bytes short-circuit, with no read handed to stock.
   */
  public List<String> problems() {
    List<String> out = new ArrayList<>();
    for (int round = 0; round < data.rounds; round++) {
      for (Mode m : modes()) {
        ModeRun r = in(m, round);
        String at = m + " round " + round + ": ";
        if (r == null) {
          out.add(at + "did not run");
          continue;
        }
        if (r.gets < data.gets * 0.95 || r.p50 <= 0 || r.opsPerSecond <= 0) {
          out.add(at + "measured " + r.gets + " gets, p50 " + r.p50 + ", " + r.opsPerSecond + "/s");
        }
        if (m.blockCache && r.hdfsPreadsPerGet() > 0.01) {
          out.add(at + "the floor read HDFS (" + fmt(r.hdfsPreadsPerGet()) + " preads per get)");
        }
        if (!m.blockCache && r.hdfsPreadsPerGet() < 0.99) {
          out.add(at + "only " + fmt(r.hdfsPreadsPerGet()) + " HDFS preads per get");
        }
        if (m.isScr()) {
          if (r.scrFallbacks != 0) {
            out.add(at + r.scrFallbacks + " reads handed to stock");
          }
          if (r.scrReads < r.gets || r.scrShortCircuitPercent() < 100.0) {
            out.add(
                at
                    + fmt(r.scrShortCircuitPercent())
                    + " % short-circuit bytes ("
                    + r.scrReads
                    + " scr reads, DataNode served "
                    + r.dataNodeBytesRead
                    + " B over TCP)");
          }
        }
      }
    }
    return out;
  }

  // ------------------------------------------------------------------------------------ output

  private static final String BEGIN = "<!-- hbase-results:%s:begin (generated by ./scr bench hbase) -->";
  private static final String END = "<!-- hbase-results:%s:end -->";

  /** The results section: shape, per-mode table, verdicts, checks. */
  public String markdown() {
    StringBuilder sb = new StringBuilder();
    double loadMin = data.runs.stream().mapToDouble(r -> r.load1).min().orElse(0);
    double loadMax = data.runs.stream().mapToDouble(r -> r.load1).max().orElse(0);
    sb.append(
        String.format(
            Locale.ROOT,
            "**Shape `%s`**: %,d rows of %,d B, `dfs.blocksize` %s, %,d warm-up + %,d measured"
                + " random gets per mode, %d interleaved rounds; %s, %d cores, load (1 min) %.1f"
                + " to %.1f.%n%n",
            data.shape,
            data.rows,
            data.valueSize,
            bytes(data.blockSize),
            data.warmupGets,
            data.gets,
            data.rounds,
            data.started.substring(0, Math.min(10, data.started.length())),
            data.cores,
            loadMin,
            loadMax));
    sb.append(
        "| mode | p50 µs (min-max) | p99 µs (min-max) | gets/s (min-max) | p50 / stock SCR"
            + " (min-max) | p99 / stock SCR (min-max) | scan rows/s | preads/get | short-circuit"
            + " |\n");
    sb.append("|---|---|---|---|---|---|---|---|---|\n");
    for (Mode m : modes()) {
      Spread p50 = spread(m, r -> r.p50);
      Spread p99 = spread(m, r -> r.p99);
      Spread ops = spread(m, r -> r.opsPerSecond);
      Spread scan = spread(m, r -> r.scanRowsPerSecond);
      Spread r50 = ratio(m, Mode.STOCK_SCR, r -> r.p50);
      Spread r99 = ratio(m, Mode.STOCK_SCR, r -> r.p99);
      Spread preads = spread(m, ModeRun::hdfsPreadsPerGet);
      String sc =
          m.isScr()
              ? fmt(spread(m, ModeRun::scrShortCircuitPercent).min) + " %"
              : m == Mode.STOCK_TCP ? "0 % (TCP)" : m.blockCache ? "no HDFS read" : "stock";
      sb.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %s | %s | %s | %,.0f | %s | %s |%n",
              m.label,
              range(p50, "%,.0f"),
              range(p99, "%,.0f"),
              range(ops, "%,.0f"),
              m == Mode.STOCK_SCR ? "1" : range(r50, "%.2f"),
              m == Mode.STOCK_SCR ? "1" : range(r99, "%.2f"),
              scan.median,
              fmt(preads.median),
              sc));
    }
    sb.append("\n| target | p50 ratio (min-max) | p99 ratio (min-max) | verdict |\n");
    sb.append("|---|---|---|---|\n");
    for (Mode m : modes()) {
      if (!m.isScr()) {
        continue;
      }
      Spread r50 = ratio(m, Mode.STOCK_SCR, r -> r.p50);
      Spread r99 = ratio(m, Mode.STOCK_SCR, r -> r.p99);
      sb.append(
          String.format(
              Locale.ROOT,
              "| %s ≤ %.1fx stock SCR | %s | %s | p50 %s, p99 %s |%n",
              m.label,
              data.target,
              range(r50, "%.2f"),
              range(r99, "%.2f"),
              verdict(r50, data.target),
              verdict(r99, data.target)));
    }
    for (Mode[] pair :
        new Mode[][] {
          {Mode.ACCESSOR_SHIM_DN, Mode.ACCESSOR_STOCK_DN},
          {Mode.SCR_FS_SHIM_DN, Mode.SCR_FS_STOCK_DN}
        }) {
      if (of(pair[0]).isEmpty() || of(pair[1]).isEmpty()) {
        continue;
      }
      Spread r50 = ratio(pair[0], pair[1], r -> r.p50);
      Spread r99 = ratio(pair[0], pair[1], r -> r.p99);
      sb.append(
          String.format(
              Locale.ROOT,
              "| %s ≤ 1.0x %s | %s | %s | p50 %s, p99 %s |%n",
              pair[0].label,
              pair[1].label,
              range(r50, "%.2f"),
              range(r99, "%.2f"),
              verdict(r50, 1.0),
              verdict(r99, 1.0)));
    }
    List<String> problems = problems();
    sb.append('\n')
        .append(
            problems.isEmpty()
                ? "Checks: every HDFS mode read at least one block from HDFS per get, the floor"
                    + " none; every scr mode read 100 % of its bytes short-circuit (scr's counters,"
                    + " no fallback, nothing over the DataNode's TCP port).\n"
                : "Checks FAILED: " + String.join("; ", problems) + "\n");
    return sb.toString();
  }

  /**
   * Replaces this shape's section of {@code doc} (between its markers, which must exist) and writes
   * the chart {@code hbase-<shape>.png} into {@code charts}.
   */
  public void updateDoc(Path doc, Path charts) throws IOException {
    String begin = String.format(Locale.ROOT, BEGIN, data.shape);
    String end = String.format(Locale.ROOT, END, data.shape);
    String text = Files.readString(doc, StandardCharsets.UTF_8);
    int b = text.indexOf(begin);
    int e = text.indexOf(end);
    if (b < 0 || e < b) {
      throw new IOException(doc + " has no " + begin + " ... " + end + " section");
    }
    String chart = "hbase-" + data.shape + ".png";
    String section =
        begin
            + "\n\n"
            + markdown()
            + "\n![HBase random gets, "
            + data.shape
            + " shape](benchmarks/"
            + chart
            + ")\n\n";
    Files.writeString(
        doc, text.substring(0, b) + section + text.substring(e), StandardCharsets.UTF_8);
    if (charts != null) {
      Files.createDirectories(charts);
      writeChart(charts.resolve(chart));
    }
  }

  /** Median p50 and p99 per mode, µs, as grouped bars. */
  public void writeChart(Path png) throws IOException {
    CategoryChart chart =
        new CategoryChartBuilder()
            .width(900)
            .height(420)
            .title(
                "HBase PerformanceEvaluation randomRead, "
                    + data.shape
                    + " shape: median of "
                    + data.rounds
                    + " rounds")
            .xAxisTitle("read path")
            .yAxisTitle("latency of one get (µs)")
            .build();
    chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
    chart.getStyler().setXAxisLabelRotation(20);
    List<String> labels = new ArrayList<>();
    List<Double> p50 = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    for (Mode m : modes()) {
      labels.add(m.label);
      p50.add(spread(m, r -> r.p50).median);
      p99.add(spread(m, r -> r.p99).median);
    }
    chart.addSeries("p50", labels, p50);
    chart.addSeries("p99", labels, p99);
    String name = png.toString();
    BitmapEncoder.saveBitmap(
        chart, name.substring(0, name.length() - 4), BitmapEncoder.BitmapFormat.PNG);
  }

  /** Median figures per mode, for callers that check a run (the smoke test). */
  public Map<Mode, Double> medianP50() {
    Map<Mode, Double> out = new LinkedHashMap<>();
    for (Mode m : modes()) {
      out.put(m, spread(m, r -> r.p50).median);
    }
    return out;
  }

  private static String range(Spread s, String f) {
    return String.format(Locale.ROOT, f + " (" + f + "-" + f + ")", s.median, s.min, s.max);
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, v == Math.rint(v) ? "%.0f" : "%.2f", v);
  }

  private static String bytes(long b) {
    return b % (1 << 20) == 0 ? (b >> 20) + " MiB" : (b >> 10) + " KiB";
  }
}
