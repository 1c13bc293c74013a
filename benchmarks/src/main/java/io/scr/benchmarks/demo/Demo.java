package io.scr.benchmarks.demo;

import io.scr.benchmarks.read.ReadPathType;
import io.scr.core.ScrClient;
import io.scr.core.ScrKeys;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.shm.SlotPoolStats;
import io.scr.socketpath.EffectiveUid;
import io.scr.socketpath.SocketPathRules;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;

/**
 * {@code ./scr demo}: starts an embedded HDFS cluster with a stock DataNode (with libhadoop when it
 * loads), then one whose DataNode runs the scr shim, writes a dataset to each, reads it through
 * stock TCP, stock short-circuit reads with HBase's 128 KiB buffer, and scr in mode A (stock
 * DataNode) and mode B (shim DataNode), checks the bytes, and prints a comparison table and scr's
 * counters (replica cache hits and misses, open fds, shared-memory slots, fallbacks).
 *
 * <p>Every figure is measured in this run on this machine. Paths whose prerequisites are missing
 * (libhadoop for stock short-circuit reads, scr classes not yet built) are listed with the reason
 * instead of a number.
 */
public final class Demo {
  private static final String FILE = "/demo/dataset";
  private static final int PREAD_SIZE = 4096;
  private static final int SCAN_BUFFER = 1 << 20;

  /** One read in this many is compared byte for byte with the dataset. */
  private static final int VERIFY_EVERY = 16;

  private final PrintStream out;
  private final Options options;

  /** Where the clusters' socket directories go (null: under java.io.tmpdir, trusted by key). */
  private final java.nio.file.Path socketBase;

  Demo(PrintStream out, Options options) {
    this(out, options, secureSocketBase());
  }

  Demo(PrintStream out, Options options, java.nio.file.Path socketBase) {
    this.out = out;
    this.options = options;
    this.socketBase = socketBase;
  }

  /**
   * A directory for the shim's socket that passes the DataNode's socket path rules with every
   * parent, for this user, and is short enough for {@code sun_path}: {@code $XDG_RUNTIME_DIR}, else
   * {@code /run} (root), else the home directory. Null when none does (then the socket goes under
   * {@code java.io.tmpdir} and the test build of the shim plugin trusts the parents).
   */
  static java.nio.file.Path secureSocketBase() {
    int uid;
    try {
      uid = EffectiveUid.self();
    } catch (IOException e) {
      return null;
    }
    List<java.nio.file.Path> candidates = new ArrayList<>();
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    if (runtime != null && !runtime.isEmpty()) {
      candidates.add(java.nio.file.Paths.get(runtime));
    }
    if (uid == 0) {
      candidates.add(java.nio.file.Paths.get("/run"));
    }
    candidates.add(java.nio.file.Paths.get(System.getProperty("user.home")));
    return firstSecure(candidates, uid);
  }

  /** The first of {@code candidates} a socket directory for {@code uid} may go under, or null. */
  static java.nio.file.Path firstSecure(List<java.nio.file.Path> candidates, int uid) {
    for (java.nio.file.Path c : candidates) {
      java.nio.file.Path base = c.toAbsolutePath();
      if (base.toString().length() <= MAX_SOCKET_BASE_LENGTH
          && java.nio.file.Files.isDirectory(base)
          && java.nio.file.Files.isWritable(base)
          && SocketPathRules.violations(base.resolve("probe"), uid).isEmpty()) {
        return base;
      }
    }
    return null;
  }

  /** Leaves room in sun_path's 107 bytes for "/scr-sock-<19 digits>/shim.<port>.sock". */
  private static final int MAX_SOCKET_BASE_LENGTH = 60;

  public static void main(String[] args) throws Exception {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("scr demo: " + e.getMessage());
      System.err.println(Options.USAGE);
      System.exit(2);
      return;
    }
    new Demo(System.out, options).run();
    // MiniDFSCluster leaves daemon threads; nothing else to wait for.
    System.exit(0);
  }

  void run() throws IOException {
    String stockCause = StockNative.unavailabilityCause();
    DataNodeMode stockMode = stockCause == null ? DataNodeMode.STOCK_SCR : DataNodeMode.TCP;
    out.printf(
        Locale.ROOT,
        "scr demo: %d MiB dataset, %d KiB blocks, %.1f s per workload and path, %d cores, Java %s%n",
        options.fileMiB,
        options.blockKiB,
        options.seconds,
        Runtime.getRuntime().availableProcessors(),
        Runtime.version());
    if (stockCause != null) {
      out.println("note: stock short-circuit reads unavailable (" + stockCause + ")");
    }
    List<Result> results = new ArrayList<>();
    // Mode A and the stock baselines: a stock DataNode (with libhadoop when it loads).
    runCluster(stockMode, "stock DataNode", results);
    // Mode B: a DataNode with the scr shim plugin; no libhadoop on either side.
    runCluster(DataNodeMode.SHIM, "DataNode with the scr shim", results);
    clearProgress();
    printTable(results);
    printCounters(results);
  }

  private void runCluster(DataNodeMode mode, String what, List<Result> results) throws IOException {
    List<ReadPath> paths = new ArrayList<>();
    for (ReadPath path : ReadPath.values()) {
      if (path.type.clusterMode() != DataNodeMode.SHIM && mode == DataNodeMode.SHIM) {
        continue;
      }
      if (path.type.clusterMode() == DataNodeMode.SHIM && mode != DataNodeMode.SHIM) {
        continue;
      }
      String unavailable = path.unavailabilityCause(mode);
      if (unavailable != null) {
        results.add(Result.unavailable(path, unavailable));
      } else {
        paths.add(path);
      }
    }
    if (paths.isEmpty()) {
      return;
    }
    progress("starting an embedded HDFS cluster: one " + what + " (" + mode + ")");
    MiniDfs.Builder cluster =
        MiniDfs.builder()
            .dataNodes(1)
            .blockSize(options.blockKiB * 1024L)
            .mode(mode)
            .configure(c -> c.set(ScrKeys.DFS_CLIENT_SOCKET_TIMEOUT.name(), "60000"));
    if (socketBase != null) {
      // The production shim plugin judges every directory above its socket, as on a real
      // DataNode: no test plugin trusting a directory (and no WARN about one).
      cluster.secureSocketBase(socketBase);
    }
    try (MiniDfs dfs = cluster.start()) {
      progress("writing " + options.fileMiB + " MiB");
      byte[] data = dfs.writeRandomFile(FILE, Math.toIntExact(options.fileMiB << 20), options.seed);
      try {
        for (ReadPath path : paths) {
          results.add(measure(dfs, path, data));
        }
      } finally {
        // The accessor keeps its engines per client context; release them before the DataNode
        // goes, or their slot pools keep calling a socket that no longer exists.
        ScrReplicaAccessorBuilder.releaseAll();
      }
    }
  }

  private Result measure(MiniDfs dfs, ReadPath path, byte[] data) throws IOException {
    // Each scr path has an engine of its own: the accessor's engine lives until the cluster's end,
    // and ScrFileSystem's settings differ from it, so sharing one client context would make the
    // second path share the first one's engine (and say so in a WARN).
    FileSystem fs =
        path.type.newFileSystem(
            dfs, c -> c.set(ScrKeys.CLIENT_CONTEXT.name(), "scr-demo-" + path.name()));
    Result result = new Result(path);
    try (FSDataInputStream in = fs.open(new Path(FILE))) {
      firstRead(path, in, data, result);
      scan(path, in, data, result); // the scan also warms the page cache for the preads
      preads(path, in, data, result);
      if (in instanceof HdfsDataInputStream) {
        result.shortCircuitBytes =
            ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
        result.totalBytes = ((HdfsDataInputStream) in).getReadStatistics().getTotalBytesRead();
      }
      if (path.type.isScr()) {
        // The same client context, so the engine these reads used.
        try (ScrClient engine = ScrClient.acquire(fs.getConf())) {
          result.counters = engine.metricsSnapshot();
        }
      }
    } finally {
      fs.close();
    }
    return result;
  }

  /**
   * The stream's first read, timed on its own: a path's first read pays its set-up (for scr, the
   * engine's start and its first shared-memory segment, once per process and client context; the
   * first scr path also loads scr's classes), which inside the scan's window made a path's scan
   * rate depend on where it stands in the order of paths.
   */
  private void firstRead(ReadPath path, FSDataInputStream in, byte[] data, Result result)
      throws IOException {
    byte[] buf = new byte[SCAN_BUFFER];
    long start = System.nanoTime();
    int n = in.read(buf, 0, buf.length);
    result.firstReadMillis = (System.nanoTime() - start) / 1e6;
    if (n <= 0) {
      throw new IOException(path + ": empty file");
    }
    check(path, buf, 0, n, data, 0);
  }

  private void scan(ReadPath path, FSDataInputStream in, byte[] data, Result result)
      throws IOException {
    byte[] buf = new byte[SCAN_BUFFER];
    long deadline = System.nanoTime() + seconds(options.seconds);
    long bytes = 0;
    long start = System.nanoTime();
    int passes = 0;
    do {
      in.seek(0);
      long pos = 0;
      while (pos < data.length) {
        int n = in.read(buf, 0, buf.length);
        if (n < 0) {
          throw new IOException(path + ": unexpected end of file at " + pos);
        }
        check(path, buf, 0, n, data, pos);
        pos += n;
        bytes += n;
        progressEvery(path, "scan", start, bytes >> 20, "MiB");
      }
      passes++;
    } while (System.nanoTime() < deadline);
    result.scanMiBps = (bytes / (1024.0 * 1024.0)) / ((System.nanoTime() - start) / 1e9);
    result.scanPasses = passes;
  }

  private void preads(ReadPath path, FSDataInputStream in, byte[] data, Result result)
      throws IOException {
    byte[] buf = new byte[PREAD_SIZE];
    SplittableRandom random = new SplittableRandom(options.seed);
    Histogram latency = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
    long bound = data.length - PREAD_SIZE;
    long start = System.nanoTime();
    long deadline = start + seconds(options.seconds);
    long ops = 0;
    while (System.nanoTime() < deadline) {
      for (int i = 0; i < 64; i++) {
        long pos = random.nextLong(bound);
        long t0 = System.nanoTime();
        in.readFully(pos, buf, 0, PREAD_SIZE);
        latency.recordValue(System.nanoTime() - t0);
        if (ops++ % VERIFY_EVERY == 0) {
          check(path, buf, 0, PREAD_SIZE, data, pos);
        }
      }
      progressEvery(path, "random 4 KiB pread", start, ops, "ops");
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    result.preadOpsPerSec = ops / elapsed;
    result.preadP50Micros = latency.getValueAtPercentile(50) / 1000.0;
    result.preadP99Micros = latency.getValueAtPercentile(99) / 1000.0;
  }

  private static void check(ReadPath path, byte[] buf, int off, int len, byte[] data, long pos)
      throws IOException {
    int from = Math.toIntExact(pos);
    if (!Arrays.equals(buf, off, off + len, data, from, from + len)) {
      throw new IOException(
          path + " returned wrong bytes for [" + pos + ", " + (pos + len) + "): demo aborted");
    }
  }

  private long lastProgress;

  private void progressEvery(ReadPath path, String what, long start, long count, String unit) {
    long now = System.nanoTime();
    if (now - lastProgress < TimeUnit.MILLISECONDS.toNanos(200)) {
      return;
    }
    lastProgress = now;
    progress(
        String.format(
            Locale.ROOT,
            "%-40s %-20s %5.1f s  %,d %s",
            path.label,
            what,
            (now - start) / 1e9,
            count,
            unit));
  }

  /** A terminal gets one live line; a log gets one line per phase. */
  private static final boolean INTERACTIVE = System.console() != null;

  private String lastPhase = "";

  private void progress(String line) {
    if (INTERACTIVE) {
      System.err.print("\r\033[K" + line);
      System.err.flush();
    } else {
      String phase = line.length() > 50 ? line.substring(0, 50) : line;
      if (!phase.equals(lastPhase)) {
        lastPhase = phase;
        System.err.println(line);
      }
    }
  }

  private static void clearProgress() {
    if (INTERACTIVE) {
      System.err.print("\r\033[K");
      System.err.flush();
    }
  }

  private void printTable(List<Result> results) {
    Result baseline = null;
    for (Result r : results) {
      if (r.path == ReadPath.STOCK_TCP) {
        baseline = r;
      }
    }
    out.println();
    out.printf(
        Locale.ROOT,
        "%-40s %12s %10s %10s %9s %12s %9s %14s %14s%n",
        "read path",
        "pread ops/s",
        "p50 us",
        "p99 us",
        "speedup",
        "scan MiB/s",
        "speedup",
        "short-circuit",
        "first read ms");
    for (Result r : results) {
      if (r.unavailable != null) {
        out.printf(Locale.ROOT, "%-40s unavailable: %s%n", r.path.label, r.unavailable);
        continue;
      }
      out.printf(
          Locale.ROOT,
          "%-40s %,12.0f %10.1f %10.1f %8.1fx %,12.0f %8.1fx %13.0f%% %14.1f%n",
          r.path.label,
          r.preadOpsPerSec,
          r.preadP50Micros,
          r.preadP99Micros,
          baseline == null ? Double.NaN : r.preadOpsPerSec / baseline.preadOpsPerSec,
          r.scanMiBps,
          baseline == null ? Double.NaN : r.scanMiBps / baseline.scanMiBps,
          r.totalBytes == 0 ? 0.0 : 100.0 * r.shortCircuitBytes / r.totalBytes,
          r.firstReadMillis);
    }
    out.println();
    out.println(
        "speedup: against stock TCP in this run; short-circuit: share of bytes the client's"
            + " ReadStatistics counted as short-circuit; every "
            + VERIFY_EVERY
            + "th pread and every scan byte were checked against the dataset; first read: the"
            + " stream's first 1 MiB read, outside the scan (a path's set-up, an scr engine's"
            + " start).");
  }

  /** scr's own counters for each scr row: what an operator sees in metrics and the summary line. */
  private void printCounters(List<Result> results) {
    out.println();
    out.printf(
        Locale.ROOT,
        "%-40s %10s %8s %9s %8s %14s %10s%n",
        "scr counters",
        "hits",
        "misses",
        "hit rate",
        "open fds",
        "slots/segments",
        "fallbacks");
    for (Result r : results) {
      ClientSnapshot c = r.counters;
      if (c == null) {
        continue;
      }
      int slots = 0;
      int segments = 0;
      for (SlotPoolStats pool : c.slotPools()) {
        slots += pool.slotsInUse();
        segments += pool.segments();
      }
      out.printf(
          Locale.ROOT,
          "%-40s %,10d %,8d %8.2f%% %8d %14s %,10d%n",
          r.path.label,
          c.cache().hitCount(),
          c.cache().missCount(),
          100.0 * c.cache().hitRate(),
          c.cache().openFds(),
          slots + "/" + segments,
          c.fallbackTotal());
    }
    out.println(
        "hits/misses: replica cache lookups; open fds: block and meta fds the cache holds;"
            + " slots/segments: shared-memory slots in use and segments mapped; fallbacks: reads"
            + " handed to the stock client, by any reason.");
  }

  private static long seconds(double s) {
    return (long) (s * 1e9);
  }

  /** The read paths the demo compares: labels over the benchmarks' {@link ReadPathType}. */
  enum ReadPath {
    STOCK_TCP("stock HDFS, TCP", ReadPathType.STOCK_TCP),
    STOCK_SCR_HBASE("stock short-circuit, 128 KiB buffer", ReadPathType.STOCK_SCR_HBASE),
    SCR_ACCESSOR("scr accessor, stock DataNode (A)", ReadPathType.SCR_ACCESSOR),
    SCR_FILESYSTEM("scr ScrFileSystem, stock DataNode (A)", ReadPathType.SCR_FILESYSTEM),
    SCR_ACCESSOR_SHIM("scr accessor, shim DataNode (B)", ReadPathType.SCR_ACCESSOR_SHIM),
    SCR_FILESYSTEM_SHIM("scr ScrFileSystem, shim DataNode (B)", ReadPathType.SCR_FILESYSTEM_SHIM);

    final String label;
    final ReadPathType type;

    ReadPath(String label, ReadPathType type) {
      this.label = label;
      this.type = type;
    }

    /** Why this path cannot run on a cluster in {@code mode}, or null. */
    String unavailabilityCause(DataNodeMode mode) {
      if (type.clusterMode() == DataNodeMode.STOCK_SCR
          && this != STOCK_TCP
          && mode != DataNodeMode.STOCK_SCR) {
        return "needs libhadoop for the stock DataNode socket";
      }
      return null;
    }
  }

  private static final class Result {
    final ReadPath path;
    String unavailable;
    double preadOpsPerSec;
    double preadP50Micros;
    double preadP99Micros;
    double scanMiBps;
    int scanPasses;
    double firstReadMillis;
    long shortCircuitBytes;
    long totalBytes;
    ClientSnapshot counters;

    Result(ReadPath path) {
      this.path = path;
    }

    static Result unavailable(ReadPath path, String why) {
      Result r = new Result(path);
      r.unavailable = why;
      return r;
    }
  }

  /** Command-line options of {@code ./scr demo}. */
  static final class Options {
    static final String USAGE =
        "usage: ./scr demo [--seconds S] [--file-mib N] [--block-kib N] [--seed N]\n"
            + "  --seconds    time per workload and read path (default 1.5)\n"
            + "  --file-mib   dataset size in MiB (default 64)\n"
            + "  --block-kib  HDFS block size in KiB, a multiple of 512 bytes (default 16384)\n"
            + "  --seed       random seed for data and offsets (default 42)";
    double seconds = 1.5;
    long fileMiB = 64;
    long blockKiB = 16 * 1024;
    long seed = 42;

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String arg = args[i];
        if (arg.equals("-h") || arg.equals("--help")) {
          throw new IllegalArgumentException("help requested");
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option " + arg + " needs a value");
        }
        String value = args[++i];
        try {
          switch (arg) {
            case "--seconds":
              o.seconds = Double.parseDouble(value);
              break;
            case "--file-mib":
              o.fileMiB = Long.parseLong(value);
              break;
            case "--block-kib":
              o.blockKiB = Long.parseLong(value);
              break;
            case "--seed":
              o.seed = Long.parseLong(value);
              break;
            default:
              throw new IllegalArgumentException("unknown option " + arg);
          }
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(arg + " expects a number, got '" + value + "'", e);
        }
      }
      if (o.seconds <= 0 || o.seconds > 600) {
        throw new IllegalArgumentException("--seconds must be in (0, 600], got " + o.seconds);
      }
      if (o.fileMiB < 1 || o.fileMiB > 1024) {
        throw new IllegalArgumentException("--file-mib must be in [1, 1024], got " + o.fileMiB);
      }
      if (o.blockKiB < 1 || o.blockKiB * 1024 % 512 != 0) {
        throw new IllegalArgumentException("--block-kib must be positive, got " + o.blockKiB);
      }
      return o;
    }
  }
}
