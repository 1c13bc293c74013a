package io.scr.reliability;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ProcessFds;
import io.scr.testing.MiniDfs;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * Scenario 4 with a real, lowered fd limit: the parent test starts this class's {@link #main} in a
 * child JVM under {@code ulimit -n L} (soft and hard: HotSpot raises the soft limit to the hard one
 * at start-up unless {@code -XX:-MaxFDLimit}, so the hard limit is what a Java reader lives with),
 * as a client of the parent's MiniDFSCluster. The child checks that scr's cache took its fd budget
 * from that limit, reads with readers and then with every replica the budget allows in use, and
 * reports on stdout; its log (log4j.properties: stdout) is the parent's to count warnings in. Exit
 * code 0: everything held; 1: an assertion failed (the line says which); anything else: a crash.
 */
final class FdLimitChild {
  static final String RESULT = "FD-LIMIT-CHILD-RESULT ";
  static final String FAILED = "FD-LIMIT-CHILD-FAILED ";

  /** The fd limit the child runs under: low, but above what the JVM and the client need. */
  static final long CHILD_LIMIT = 384;

  private FdLimitChild() {}

  /** What the child printed and how it ended. */
  static final class Result {
    private final int exitCode;
    private final List<String> lines;

    Result(int exitCode, List<String> lines) {
      this.exitCode = exitCode;
      this.lines = lines;
    }

    int exitCode() {
      return exitCode;
    }

    String output() {
      return String.join("\n", lines);
    }

    long linesContaining(String fragment) {
      return lines.stream().filter(l -> l.contains(fragment)).count();
    }

    String resultLine() {
      return lines.stream().filter(l -> l.startsWith(RESULT)).findFirst().orElse(null);
    }

    @Override
    public String toString() {
      return "exit " + exitCode + ", " + (resultLine() == null ? "no result" : resultLine());
    }
  }

  /** The default fd budget of a cache in a process with soft limit {@code l} (LeaseCacheConfig). */
  static long derivedBudget(long l) {
    return Math.max(l / 2 - 1024, l / 8);
  }

  /**
   * Writes a file of a few blocks more than the child's cache holds, and the client configuration,
   * then runs the child under the lowered limit and collects its output (bounded: 120 s).
   */
  static Result run(MiniDfs dfs, int blockSize) throws IOException, InterruptedException {
    long parentLimit = ProcessFds.softLimit();
    if (parentLimit < 0) {
      throw new AssertionError("this JVM cannot tell its fd limit");
    }
    // Never raise a limit: a build that already runs lower keeps its own.
    long limit = Math.min(CHILD_LIMIT, parentLimit);
    // More blocks than the budget has fds: a replica costs one or two fds (two unless the meta
    // file is mapped and its fd closed).
    int blocks = (int) derivedBudget(limit) + 4;
    long seed = 44;
    dfs.writeRandomFile("/fdlimit/f", blocks * blockSize, seed);

    File dir = Files.createTempDirectory("fd-limit-child").toFile();
    File confFile = new File(dir, "client.xml");
    Configuration c = dfs.clientConf();
    Faults.scrSettings(dfs, c);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    try (OutputStream out = new FileOutputStream(confFile)) {
      c.writeXml(out);
    }
    String java = new File(System.getProperty("java.home"), "bin/java").getPath();
    List<String> cmd = new ArrayList<>();
    cmd.add(java);
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-opens") || arg.startsWith("-D")) {
        cmd.add(arg);
      }
    }
    cmd.addAll(
        Arrays.asList(
            "-Xmx256m",
            "-cp",
            System.getProperty("java.class.path"),
            FdLimitChild.class.getName(),
            confFile.getPath(),
            "/fdlimit/f",
            Integer.toString(blocks),
            Integer.toString(blockSize),
            Long.toString(seed),
            Long.toString(limit)));
    StringBuilder shell = new StringBuilder("ulimit -n ").append(limit).append(" && exec");
    for (String a : cmd) {
      shell.append(" '").append(a.replace("'", "'\\''")).append('\'');
    }
    Process p =
        new ProcessBuilder("bash", "-c", shell.toString())
            .directory(dir)
            .redirectErrorStream(true)
            .start();
    p.getOutputStream().close();
    List<String> lines = new ArrayList<>();
    Thread pump =
        new Thread(
            () -> {
              try (java.io.BufferedReader r =
                  new java.io.BufferedReader(
                      new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  synchronized (lines) {
                    lines.add(line);
                  }
                }
              } catch (IOException e) {
                synchronized (lines) {
                  lines.add("(reading the child's output failed: " + e + ")");
                }
              }
            },
            "fd-limit-child-output");
    pump.start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    pump.join(10_000);
    Files.deleteIfExists(confFile.toPath());
    Files.deleteIfExists(dir.toPath());
    synchronized (lines) {
      return new Result(p.isAlive() ? -1 : p.exitValue(), new ArrayList<>(lines));
    }
  }

  /** Child entry point: {@code conf path blocks blockSize seed expectedLimit}. */
  public static void main(String[] args) throws Exception {
    try {
      String report = check(args);
      System.out.println(RESULT + report);
      System.out.flush();
      System.exit(0);
    } catch (AssertionError e) {
      System.out.println(FAILED + e.getMessage());
      System.out.flush();
      System.exit(1);
    } catch (Throwable e) {
      System.out.println(FAILED + e);
      e.printStackTrace(System.out);
      System.out.flush();
      System.exit(2);
    }
  }

  /**
   * Leases blocks 0, 1, ... from {@code socket} and keeps the leases in {@code held} until the
   * cache refuses one for its fd budget (every replica the budget allows in use, as by busy
   * handlers); returns the first block it refused. The refusal is counted as an FD_BUDGET fallback.
   */
  static int leaseUntilTheBudgetIsFull(
      Engine scr, LocatedBlocks lbs, String socket, List<ReplicaLease> held) throws IOException {
    long fallbacks = scr.fallbackCount(FallbackReason.FD_BUDGET);
    for (int b = 0; b < lbs.locatedBlockCount(); b++) {
      LocatedBlock lb = lbs.get(b);
      ReplicaLease lease = scr.lease(lb.getBlock(), lb.getBlockToken(), socket, null, null);
      if (lease == null) {
        if (scr.fallbackCount(FallbackReason.FD_BUDGET) == fallbacks) {
          throw new AssertionError(
              "block " + b + " refused for another reason: " + scr.metricsSnapshot().fallbacks());
        }
        return b;
      }
      held.add(lease);
    }
    throw new AssertionError("the budget held all " + held.size() + " blocks");
  }

  private static void require(boolean condition, String what) {
    if (!condition) {
      throw new AssertionError(what);
    }
  }

  private static String check(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(new Path(new File(args[0]).toURI()));
    Path path = new Path(args[1]);
    int blocks = Integer.parseInt(args[2]);
    int blockSize = Integer.parseInt(args[3]);
    long seed = Long.parseLong(args[4]);
    long expectedLimit = Long.parseLong(args[5]);
    byte[] data = new byte[blocks * blockSize];
    new Random(seed).nextBytes(data);

    long limit = ProcessFds.softLimit();
    require(
        limit == expectedLimit, "the child runs with fd limit " + limit + ", not " + expectedLimit);
    try (ScrFileSystem fs = (ScrFileSystem) FileSystem.newInstance(conf)) {
      Engine scr = Engine.running(fs.getConf());
      LeaseCacheStats sizing = scr.cacheStats();
      require(
          sizing.fdBudget() == derivedBudget(limit),
          "fd budget " + sizing.fdBudget() + " is not derived from the limit " + limit);
      int capacity = sizing.capacity();
      require(capacity == derivedBudget(limit) / 2, "capacity " + capacity);

      // Readers over a working set larger than the cache, the process near its limit.
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong mismatches = new AtomicLong();
      ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
      List<Thread> readers = new ArrayList<>();
      try (FSDataInputStream in = fs.open(path)) {
        for (int i = 0; i < 8; i++) {
          Thread t =
              new Thread(
                  AbstractFaultTest.preadLoop(in, data, 4400 + i, stop, mismatches, errors),
                  "child-reader-" + i);
          t.start();
          readers.add(t);
        }
        long maxCacheFds = 0;
        long maxProcessFds = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (System.nanoTime() < deadline) {
          maxCacheFds = Math.max(maxCacheFds, scr.cacheStats().openFds());
          maxProcessFds = Math.max(maxProcessFds, ProcessFds.openCount());
          TimeUnit.MILLISECONDS.sleep(5); // sampling interval
        }
        stop.set(true);
        for (Thread t : readers) {
          t.join(30_000);
          require(!t.isAlive(), t.getName() + " hangs");
        }
        require(mismatches.get() == 0, mismatches.get() + " reads returned wrong bytes");
        require(errors.isEmpty(), "reads failed: " + errors);
        require(maxCacheFds <= sizing.fdBudget(), "cache fds " + maxCacheFds + " > budget");
        require(maxProcessFds < limit, "process fds " + maxProcessFds + " reached the limit");
        require(scr.cacheStats().evictionCount() > 0, "no eviction: " + scr.cacheStats());

        // Every replica the budget allows in use: other blocks fall back, with the right bytes.
        LocatedBlocks lbs = fs.getClient().getLocatedBlocks(path.toString(), 0, data.length);
        String socket = scr.localSocketPaths().get(0);
        List<ReplicaLease> held = new ArrayList<>();
        try {
          int first = leaseUntilTheBudgetIsFull(scr, lbs, socket, held);
          require(first > 0 && first < blocks, "leased " + first + " of " + blocks + " blocks");
          for (int b = first; b < blocks; b++) {
            try (HdfsDataInputStream other = (HdfsDataInputStream) fs.open(path)) {
              byte[] buf = new byte[blockSize];
              other.readFully((long) b * blockSize, buf);
              require(
                  Arrays.equals(buf, 0, blockSize, data, b * blockSize, (b + 1) * blockSize),
                  "block " + b + " read wrong bytes");
              require(
                  other.getReadStatistics().getTotalShortCircuitBytesRead() == 0,
                  "block " + b + " short-circuited beyond the budget");
            }
          }
        } finally {
          held.forEach(ReplicaLease::close);
        }
        long fallbacks = scr.fallbackCount(FallbackReason.FD_BUDGET);
        require(fallbacks >= 2, "FD_BUDGET fallbacks " + fallbacks);
        byte[] all = new byte[data.length];
        try (HdfsDataInputStream again = (HdfsDataInputStream) fs.open(path)) {
          again.readFully(0, all);
          require(Arrays.equals(all, data), "the whole file read wrong bytes");
          require(
              again.getReadStatistics().getTotalShortCircuitBytesRead() == data.length,
              "with the leases back, reads short-circuit again");
        }
        return String.format(
            Locale.ROOT,
            "limit %d, fd budget %d, capacity %d, max cache fds %d, max process fds %d,"
                + " evictions %d, FD_BUDGET fallbacks %d",
            limit,
            sizing.fdBudget(),
            capacity,
            maxCacheFds,
            maxProcessFds,
            scr.cacheStats().evictionCount(),
            fallbacks);
      }
    }
  }
}
