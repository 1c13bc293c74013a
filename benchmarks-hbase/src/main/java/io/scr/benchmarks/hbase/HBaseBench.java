package io.scr.benchmarks.hbase;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.PerformanceEvaluationRun;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/**
 * {@code ./scr bench hbase}: HBase's own PerformanceEvaluation (random gets, a scan) through a
 * RegionServer reading from a DataNode, both separate processes, in every read path ({@link Mode}),
 * interleaved in rounds over the same data; the report compares each mode with stock short-circuit
 * reads within each round ({@link HBaseBenchReport}).
 *
 * <p>Data reaches every get from HDFS: the table's column family has {@code BLOCKCACHE => false}
 * (data blocks are never cached; index and bloom blocks are, as in production), except in the floor
 * mode, which turns it on and reads the whole table once before measuring, so no get reads HDFS.
 * The RegionServer's HDFS pread count (FsPReadTime) checks both, per mode.
 *
 * <p>Usage: {@code HBaseBench [--smoke | --shape default|odyssey] [--rounds N] [--rows N] [--gets
 * N] [--warmup N] [--block-size BYTES] [--modes M,M,...] [--no-scan] [--jfr DIR] [--native DIR]
 * [--json FILE] [--doc FILE --charts DIR] [--from-json FILE]}; {@code --from-json} renders an
 * earlier run's results (the doc section, the chart, the page of every round) without running.
 */
public final class HBaseBench {
  static final TableName TABLE = TableName.valueOf("TestTable");

  /** PerformanceEvaluation's column family ({@code info0}). */
  private static final byte[] FAMILY = org.apache.hadoop.hbase.PerformanceEvaluation.FAMILY_ZERO;

  private HBaseBench() {}

  /** What to run and where the results go. */
  static final class Options {
    Shape shape = Shape.defaultShape();
    List<Mode> modes = new ArrayList<>(Arrays.asList(defaultOrder()));
    boolean scan = true;
    Path jfrDir;
    Path nativeDir = Path.of(System.getProperty("scr.native.dir", "target/native"));
    Path json;
    Path doc;
    Path charts;

    /** Render this earlier run's results instead of running. */
    Path fromJson;

    static Options parse(String[] args) {
      Options o = new Options();
      Integer rows = null;
      Integer gets = null;
      Integer warmup = null;
      Integer rounds = null;
      Long blockSize = null;
      boolean modesGiven = false;
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "--smoke":
            o.shape = Shape.smoke();
            break;
          case "--shape":
            String s = args[++i];
            o.shape = s.equals("odyssey") ? Shape.odyssey() : Shape.defaultShape();
            if (!s.equals("odyssey") && !s.equals("default")) {
              throw new IllegalArgumentException("--shape default|odyssey, not " + s);
            }
            break;
          case "--rounds":
            rounds = Integer.parseInt(args[++i]);
            break;
          case "--rows":
            rows = Integer.parseInt(args[++i]);
            break;
          case "--gets":
            gets = Integer.parseInt(args[++i]);
            break;
          case "--warmup":
            warmup = Integer.parseInt(args[++i]);
            break;
          case "--block-size":
            blockSize = Long.parseLong(args[++i]);
            break;
          case "--modes":
            modesGiven = true;
            o.modes = new ArrayList<>();
            for (String m : args[++i].split(",", -1)) {
              o.modes.add(Mode.valueOf(m.trim().toUpperCase(Locale.ROOT)));
            }
            break;
          case "--no-scan":
            o.scan = false;
            break;
          case "--jfr":
            o.jfrDir = Path.of(args[++i]);
            break;
          case "--native":
            o.nativeDir = Path.of(args[++i]);
            break;
          case "--json":
            o.json = Path.of(args[++i]);
            break;
          case "--doc":
            o.doc = Path.of(args[++i]);
            break;
          case "--charts":
            o.charts = Path.of(args[++i]);
            break;
          case "--from-json":
            o.fromJson = Path.of(args[++i]);
            break;
          default:
            throw new IllegalArgumentException("unknown option " + a);
        }
      }
      Shape b = o.shape;
      if (b.shareProcesses && !modesGiven) {
        o.modes = new ArrayList<>(Arrays.asList(smokeOrder()));
      }
      o.shape =
          b.with(
              rows != null ? rows : b.rows,
              warmup != null ? warmup : b.warmupGets,
              gets != null ? gets : b.gets,
              rounds != null ? rounds : b.rounds,
              blockSize != null ? blockSize : b.blockSize);
      if (o.shape.gets > o.shape.rows || o.shape.warmupGets > o.shape.rows) {
        throw new IllegalArgumentException("gets and warm-up gets must not exceed the rows");
      }
      return o;
    }
  }

  /**
   * The order of a round: the stock DataNode's modes, then the shim's (odd rounds run it backwards,
   * so the DataNode restarts once per round and no mode always runs first or last). The floor reads
   * no HDFS and runs with whichever DataNode is up.
   */
  static Mode[] defaultOrder() {
    return new Mode[] {
      Mode.FLOOR,
      Mode.STOCK_TCP,
      Mode.STOCK_SCR,
      Mode.ACCESSOR_STOCK_DN,
      Mode.SCR_FS_STOCK_DN,
      Mode.ACCESSOR_SHIM_DN,
      Mode.SCR_FS_SHIM_DN
    };
  }

  /**
   * The smoke's order: the load's process (stock TCP) measures stock TCP, stock short-circuit's the
   * floor; then one HBase start for each other mode, and one DataNode restart.
   */
  static Mode[] smokeOrder() {
    return new Mode[] {
      Mode.STOCK_TCP,
      Mode.STOCK_SCR,
      Mode.FLOOR,
      Mode.ACCESSOR_STOCK_DN,
      Mode.SCR_FS_STOCK_DN,
      Mode.ACCESSOR_SHIM_DN,
      Mode.SCR_FS_SHIM_DN
    };
  }

  public static void main(String[] args) throws Exception {
    Options o = Options.parse(args);
    HBaseBenchReport report = o.fromJson != null ? HBaseBenchReport.readJson(o.fromJson) : run(o);
    System.out.println(report.detail());
    System.out.println(report.markdown());
    if (o.json != null && o.fromJson == null) {
      report.writeJson(o.json);
      System.out.println("hbase-bench: results in " + o.json);
    }
    if (o.doc != null) {
      report.updateDoc(o.doc, o.charts);
      System.out.println("hbase-bench: updated " + o.doc + " and charts in " + o.charts);
    }
    System.exit(0); // HBase's client leaves non-daemon threads behind
  }

  /** Loads the table once, then runs every mode in every round. */
  static HBaseBenchReport run(Options o) throws Exception {
    Shape shape = o.shape;
    HBaseBenchReport report = new HBaseBenchReport(shape, Instant.now().toString());
    report.flightRecording(o.jfrDir != null);
    log(
        "shape %s: %d rows of %d B, dfs.blocksize %d, %d warm-up + %d measured gets, %d rounds,"
            + " modes %s",
        shape.name,
        shape.rows,
        shape.valueSize,
        shape.blockSize,
        shape.warmupGets,
        shape.gets,
        shape.rounds,
        o.modes);
    try (BenchCluster cluster = new BenchCluster(shape, o.nativeDir)) {
      long t0 = System.nanoTime();
      cluster.startNameNode();
      cluster.dataNode(Mode.DataNodeSide.STOCK);
      load(cluster, shape);
      log("cluster up and table loaded in %.0f s", (System.nanoTime() - t0) / 1e9);
      for (int round = 0; round < shape.rounds; round++) {
        List<Mode> order = new ArrayList<>(o.modes);
        if (round % 2 == 1) {
          Collections.reverse(order);
        }
        for (Mode mode : order) {
          ModeRun r = measure(cluster, o, mode, round);
          report.add(r);
          if (o.json != null) {
            report.writeJson(o.json); // what ran so far survives an interrupted run
          }
          log(
              "round %d %-24s p50 %7.0f µs  p99 %7.0f µs  %6.0f gets/s  scan %7.0f rows/s"
                  + "  preads/get %.2f  scr %d reads %d B (%d fallbacks)  DN TCP %d B  load %.1f",
              round,
              mode.label,
              r.p50,
              r.p99,
              r.opsPerSecond,
              r.scanRowsPerSecond,
              r.hdfsPreadsPerGet(),
              r.scrReads,
              r.scrBytes,
              r.scrFallbacks,
              r.dataNodeBytesRead,
              r.load1);
        }
      }
    }
    return report;
  }

  private static void load(BenchCluster cluster, Shape shape) throws Exception {
    cluster.startHBase(Mode.STOCK_TCP, List.of());
    Configuration conf = cluster.clientConf();
    PerformanceEvaluationRun.run(
        conf,
        List.of(
            "--nomapred",
            "--rows=" + shape.rows,
            "--valueSize=" + shape.valueSize,
            "--writeToWAL=false",
            "--splitPolicy=org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy",
            "sequentialWrite",
            "1"));
    try (Connection c = ConnectionFactory.createConnection(conf);
        Admin admin = c.getAdmin()) {
      // One HFile of every row; data blocks from HDFS on every get from now on.
      admin.flush(TABLE);
      admin.majorCompact(TABLE);
      long deadline = System.nanoTime() + 600_000_000_000L;
      Thread.sleep(1000); // a major compaction is queued, not yet running, when the call returns
      while (admin.getCompactionState(TABLE) != CompactionState.NONE) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("major compaction of " + TABLE + " still running");
        }
        Thread.sleep(500);
      }
      setBlockCache(admin, false);
    }
    if (!shape.shareProcesses) {
      cluster.stopHBase();
    }
  }

  private static void setBlockCache(Admin admin, boolean on) throws Exception {
    ColumnFamilyDescriptor cf = admin.getDescriptor(TABLE).getColumnFamily(FAMILY);
    admin.modifyColumnFamily(
        TABLE, ColumnFamilyDescriptorBuilder.newBuilder(cf).setBlockCacheEnabled(on).build());
  }

  private static ModeRun measure(BenchCluster cluster, Options o, Mode mode, int round)
      throws Exception {
    Shape shape = o.shape;
    if (!shape.shareProcesses || !cluster.hbaseServes(mode)) {
      cluster.stopHBase();
      if (!mode.blockCache) {
        cluster.dataNode(mode.dataNode);
      }
      List<String> jvm = new ArrayList<>();
      if (o.jfrDir != null) {
        Files.createDirectories(o.jfrDir);
        Path jfr = o.jfrDir.resolve(String.format("%s-%s-r%d.jfr", shape.name, mode, round));
        jvm.add("-XX:StartFlightRecording=settings=default,filename=" + jfr.toAbsolutePath());
      }
      cluster.startHBase(mode, jvm);
    }
    Configuration conf = cluster.clientConf();
    ModeRun r = new ModeRun();
    r.round = round;
    r.mode = mode;
    try (Connection c = ConnectionFactory.createConnection(conf);
        Admin admin = c.getAdmin()) {
      if (mode.blockCache) {
        setBlockCache(admin, true);
        readAll(c);
      }
      randomRead(conf, shape, shape.warmupGets);
      Counters before = Counters.read(cluster);
      r.load1 = load1();
      PerformanceEvaluationRun.Figures f = randomRead(conf, shape, shape.gets);
      Counters after = Counters.read(cluster);
      r.gets = f.ops;
      r.p50 = f.p50;
      r.p99 = f.p99;
      r.p999 = f.p999;
      r.mean = f.mean;
      r.opsPerSecond = f.opsPerSecond();
      r.hdfsPreads = after.hdfsPreads - before.hdfsPreads;
      r.scrReads = after.scrReads - before.scrReads;
      r.scrBytes = after.scrBytes - before.scrBytes;
      r.scrFallbacks = after.scrFallbacks - before.scrFallbacks;
      r.dataNodeReadOps = after.dataNodeReadOps - before.dataNodeReadOps;
      r.dataNodeBytesRead = after.dataNodeBytesRead - before.dataNodeBytesRead;
      if (o.scan) {
        PerformanceEvaluationRun.Figures s =
            PerformanceEvaluationRun.run(
                conf, List.of("--nomapred", "--rows=" + shape.rows, "scan", "1"));
        r.scanRowsPerSecond = s.opsPerSecond();
      }
      if (mode.blockCache) {
        setBlockCache(admin, false);
      }
    }
    if (!shape.shareProcesses) {
      cluster.stopHBase();
    }
    return r;
  }

  /** A full scan that puts every block in the block cache (the floor's warm-up). */
  private static void readAll(Connection c) throws Exception {
    try (Table t = c.getTable(TABLE);
        ResultScanner s = t.getScanner(new Scan().setCacheBlocks(true).setCaching(1000))) {
      for (Result r = s.next(); r != null; r = s.next()) {
        if (r.isEmpty()) {
          throw new IllegalStateException("empty row in " + TABLE);
        }
      }
    }
  }

  private static PerformanceEvaluationRun.Figures randomRead(
      Configuration conf, Shape shape, int gets) throws Exception {
    // randomRead reads `rows * sampleRate` random rows of the first `rows`.
    float sampleRate = (float) gets / shape.rows;
    return PerformanceEvaluationRun.run(
        conf,
        List.of(
            "--nomapred",
            "--rows=" + shape.rows,
            "--sampleRate=" + sampleRate,
            "--valueSize=" + shape.valueSize,
            "--latency",
            "randomRead",
            "1"));
  }

  /** The counters of the HBase and DataNode processes that say where bytes came from. */
  private static final class Counters {
    long hdfsPreads;
    long scrReads;
    long scrBytes;
    long scrFallbacks;
    long dataNodeReadOps;
    long dataNodeBytesRead;

    static Counters read(BenchCluster cluster) throws Exception {
      // metrics2 refreshes JMX once per period (1 s here); HBase's beans can lag one more
      Thread.sleep(2_500);
      Counters c = new Counters();
      for (JsonNode b : cluster.hbaseJmx("Hadoop:service=HBase,name=RegionServer,sub=IO")) {
        c.hdfsPreads += b.path("FsPReadTime_num_ops").asLong();
      }
      for (JsonNode b : cluster.hbaseJmx("Hadoop:service=HBase,name=ScrClient-*")) {
        c.scrReads += b.path("ShortCircuitReads").asLong();
        c.scrBytes += b.path("ShortCircuitBytes").asLong();
        c.scrFallbacks += b.path("FallbackTotal").asLong();
      }
      for (JsonNode b : cluster.dataNodeActivity()) {
        c.dataNodeReadOps += b.path("ReadBlockOpNumOps").asLong();
        c.dataNodeBytesRead += b.path("BytesRead").asLong();
      }
      return c;
    }
  }

  private static double load1() {
    try {
      String l = Files.readString(Path.of("/proc/loadavg"));
      return Double.parseDouble(l.substring(0, l.indexOf(' ')));
    } catch (Exception e) {
      return -1;
    }
  }

  static void log(String fmt, Object... args) {
    System.err.println("hbase-bench: " + String.format(Locale.ROOT, fmt, args));
  }
}
