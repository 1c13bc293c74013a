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
 * The results of one {@link HBaseBench} run and what they say: per mode the median round's p50, p99
 * and gets/s with the min-max over rounds, each mode's ratio to stock short-circuit reads within
 * each round, a verdict per target that says "not resolved" when the rounds disagree, and the
 * checks that make the figures mean what they claim (every HDFS mode reads HDFS on every get, the
 * floor does not, every scr mode reads 100 % short-circuit). JSON in and out, a markdown section
 * for {@code docs/benchmarks.md} and a chart.
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

    /** Whether the HBase process ran with a flight recording (every mode alike). */
    public boolean flightRecording;

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

  void flightRecording(boolean on) {
    data.flightRecording = on;
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
   * What makes the figures mean what they claim; empty when all hold. Every mode completed its gets
   * in every round; every HDFS mode read a block from HDFS per get, the floor nearly none; every
   * scr mode read 100 % of its HDFS bytes short-circuit, with no read handed to stock.
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

  private static final String BEGIN =
      "<!-- hbase-results:%s:begin (generated by ./scr bench hbase) -->";
  private static final String END = "<!-- hbase-results:%s:end -->";

  /** The shape, the machine and the load, one paragraph. */
  private String header() {
    double loadMin = data.runs.stream().mapToDouble(r -> r.load1).min().orElse(0);
    double loadMax = data.runs.stream().mapToDouble(r -> r.load1).max().orElse(0);
    return String.format(
        Locale.ROOT,
        "**Shape `%s`**: %,d rows of %,d B, `dfs.blocksize` %s, %,d warm-up + %,d measured"
            + " random gets per mode, %d interleaved rounds%s; %s, %d cores, load (1 min) %.1f"
            + " to %.1f.%n%n",
        data.shape,
        data.rows,
        data.valueSize,
        bytes(data.blockSize),
        data.warmupGets,
        data.gets,
        data.rounds,
        data.flightRecording ? ", HBase under a flight recording (JFR defaults)" : "",
        data.started.substring(0, Math.min(10, data.started.length())),
        data.cores,
        loadMin,
        loadMax);
  }

  /**
   * The summary for {@code docs/benchmarks.md}: per mode the median round with min-max, the ratios
   * to stock short-circuit within rounds, the verdicts, and the checks.
   */
  public String markdown() {
    StringBuilder sb = new StringBuilder(header());
    sb.append(
        "| mode | p50 µs | p99 µs | gets/s | p50 / stock SCR | p99 / stock SCR | verdict |\n");
    sb.append("|---|---:|---:|---:|---:|---:|---|\n");
    for (Mode m : modes()) {
      Spread r50 = ratio(m, Mode.STOCK_SCR, r -> r.p50);
      Spread r99 = ratio(m, Mode.STOCK_SCR, r -> r.p99);
      sb.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %s | %s | %s | %s | %s |%n",
              m.label,
              range(spread(m, r -> r.p50), "%,.0f"),
              range(spread(m, r -> r.p99), "%,.0f"),
              range(spread(m, r -> r.opsPerSecond), "%,.0f"),
              m == Mode.STOCK_SCR ? "1" : range(r50, "%.2f"),
              m == Mode.STOCK_SCR ? "1" : range(r99, "%.2f"),
              verdicts(m)));
    }
    sb.append('\n').append(checks());
    return sb.toString();
  }

  /** The verdicts of {@code m}'s targets: scr modes against stock SCR, mode B against mode A. */
  private String verdicts(Mode m) {
    if (!m.isScr()) {
      return "";
    }
    String v =
        String.format(
            Locale.ROOT,
            "≤ %.1fx: p50 %s, p99 %s",
            data.target,
            verdict(ratio(m, Mode.STOCK_SCR, r -> r.p50), data.target),
            verdict(ratio(m, Mode.STOCK_SCR, r -> r.p99), data.target));
    Mode a = modeA(m);
    if (a != null && !of(a).isEmpty()) {
      Spread r50 = ratio(m, a, r -> r.p50);
      Spread r99 = ratio(m, a, r -> r.p99);
      v +=
          String.format(
              Locale.ROOT,
              "; vs stock DN %s / %s: p50 %s, p99 %s",
              range(r50, "%.2f"),
              range(r99, "%.2f"),
              verdict(r50, 1.0),
              verdict(r99, 1.0));
    }
    return v;
  }

  /** The mode-A twin of a mode-B mode (same client, stock DataNode), else null. */
  private static Mode modeA(Mode m) {
    switch (m) {
      case ACCESSOR_SHIM_DN:
        return Mode.ACCESSOR_STOCK_DN;
      case SCR_FS_SHIM_DN:
        return Mode.SCR_FS_STOCK_DN;
      default:
        return null;
    }
  }

  private String checks() {
    List<String> problems = problems();
    return problems.isEmpty()
        ? "Checks: every HDFS mode read at least one block from HDFS per get, the floor none;"
            + " every scr mode read 100 % of its bytes short-circuit (scr's counters, no"
            + " fallback, nothing over the DataNode's TCP port).\n"
        : "Checks FAILED: " + String.join("; ", problems) + "\n";
  }

  /**
   * Every round of every mode: latency, rate, scan, and the counters behind the checks, with the
   * ratios to stock short-circuit of that round.
   */
  public String detail() {
    StringBuilder sb =
        new StringBuilder("# HBase end to end, shape `" + data.shape + "`: every round\n\n");
    sb.append(
            "Generated by `./scr bench hbase`; the summary is in [benchmarks.md](../benchmarks.md")
        .append("#hbase-end-to-end-performanceevaluation).\n\n")
        .append(header());
    sb.append(
        "| round | mode | load | p50 µs | p99 µs | p99.9 µs | mean µs | gets/s | p50, p99 / stock"
            + " SCR | scan rows/s | HDFS preads/get | scr reads | scr MB | fallbacks | DN TCP MB"
            + " |\n");
    sb.append("|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    List<ModeRun> sorted = new ArrayList<>(data.runs);
    sorted.sort((x, y) -> x.round != y.round ? x.round - y.round : x.mode.compareTo(y.mode));
    for (ModeRun r : sorted) {
      ModeRun b = in(Mode.STOCK_SCR, r.round);
      String ratios =
          b == null || b.p50 <= 0
              ? ""
              : String.format(Locale.ROOT, "%.2f, %.2f", r.p50 / b.p50, r.p99 / b.p99);
      sb.append(
          String.format(
              Locale.ROOT,
              "| %d | %s | %.1f | %,.0f | %,.0f | %,.0f | %,.0f | %,.0f | %s | %,.0f | %s | %,d |"
                  + " %,.1f | %d | %,.1f |%n",
              r.round,
              r.mode.label,
              r.load1,
              r.p50,
              r.p99,
              r.p999,
              r.mean,
              r.opsPerSecond,
              ratios,
              r.scanRowsPerSecond,
              fmt(r.hdfsPreadsPerGet()),
              r.scrReads,
              r.scrBytes / 1e6,
              r.scrFallbacks,
              r.dataNodeBytesRead / 1e6));
    }
    sb.append('\n').append(checks());
    return sb.toString();
  }

  /**
   * Replaces this shape's section of {@code doc} (between its markers, which must exist) with
   * {@link #markdown()} and writes {@code hbase-<shape>.png} (the chart) and {@code
   * hbase-<shape>.md} ({@link #detail()}) into {@code charts}.
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
    String base = "hbase-" + data.shape;
    String rel = charts.getFileName() + "/" + base;
    String section =
        begin
            + "\n\n"
            + markdown()
            + "\nEvery round: ["
            + rel
            + ".md]("
            + rel
            + ".md).\n\n![HBase random gets, "
            + data.shape
            + " shape]("
            + rel
            + ".png)\n\n";
    Files.writeString(
        doc, text.substring(0, b) + section + text.substring(e), StandardCharsets.UTF_8);
    Files.createDirectories(charts);
    writeChart(charts.resolve(base + ".png"));
    Files.writeString(charts.resolve(base + ".md"), detail(), StandardCharsets.UTF_8);
  }

  /**
   * Per mode the median over rounds of its p50 and p99 divided by stock short-circuit's of the same
   * round, as grouped bars (lower is faster; stock short-circuit is 1).
   */
  public void writeChart(Path png) throws IOException {
    CategoryChart chart =
        new CategoryChartBuilder()
            .width(900)
            .height(420)
            .title(
                String.format(
                    Locale.ROOT,
                    "HBase randomRead, %s shape: latency / stock short-circuit's, median of %d"
                        + " rounds (target %.1f)",
                    data.shape,
                    data.rounds,
                    data.target))
            .xAxisTitle("read path")
            .yAxisTitle("ratio to stock short-circuit (lower is faster)")
            .build();
    chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNE);
    chart.getStyler().setXAxisLabelRotation(20);
    List<String> labels = new ArrayList<>();
    List<Double> p50 = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    for (Mode m : modes()) {
      Spread r50 = ratio(m, Mode.STOCK_SCR, r -> r.p50);
      Spread r99 = ratio(m, Mode.STOCK_SCR, r -> r.p99);
      if (Double.isNaN(r50.median) || Double.isNaN(r99.median)) {
        continue;
      }
      labels.add(m.label);
      p50.add(r50.median);
      p99.add(r99.median);
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
