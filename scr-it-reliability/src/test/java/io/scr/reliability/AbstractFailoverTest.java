package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.reliability.ReaderLoad.Bytes;
import io.scr.reliability.ReaderLoad.Kind;
import io.scr.reliability.ReaderLoad.Sample;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;

/**
 * The local DataNode hangs, dies, restarts or turns slow while readers hold streams open; the
 * NameNode and three DataNodes run as separate processes ({@link ProcessHdfs}), the client's
 * DataNode listed first. Every assertion is on what the readers' streams returned and how long each
 * pread took, and on the streams' own read statistics ({@code
 * getReadStatistics().getTotalShortCircuitBytesRead()}) for the short-circuit share.
 *
 * <p>Files are replicated 3 times, so every block has two healthy replicas on the "remote"
 * DataNodes. Prefetch is off: a file opened during a fault, or a block past the prefetch bound,
 * meets the fault on its first read, which is what these tests are about.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractFailoverTest {
  static final int BLOCK = 1 << 20;
  static final int FILES = 4;
  static final int BLOCKS_PER_FILE = 8;

  /** Readers of every block, first reads of new blocks included. */
  static final int THREADS = 4;

  /**
   * Readers of replicas opened before the fault only: they keep measuring open replicas when every
   * other reader waits on a first read.
   */
  static final int OPEN_REPLICA_THREADS = 2;

  /** Readers pause this long between preads: steady load without starving two cores. */
  static final int PAUSE_MICROS = 500;

  static final Duration HANG = Duration.ofSeconds(20);
  static final Duration FIRST_READ_LIMIT = Duration.ofSeconds(1);
  static final Duration OPEN_REPLICA_LIMIT = Duration.ofMillis(50);

  /**
   * The share of open-replica reads that must stay within {@link #OPEN_REPLICA_LIMIT}: tens of
   * thousands are read during a hang, and a reader that waited for the hung DataNode would make
   * them all slow, while one stall of the test JVM on two cores (a collection, the scheduler) can
   * make the single slowest one take more than the limit without waiting for anything.
   */
  static final double OPEN_REPLICA_QUANTILE = 0.999;

  static final Duration RECOVERY = Duration.ofSeconds(2);
  static final Duration OUTAGE = Duration.ofSeconds(6);

  /**
   * Stock and scr read under the same fault in one JVM: after kill -9 or SIGTERM of the local
   * DataNode and its restart, scr's slowest read may exceed stock TCP's slowest by this much and no
   * more. No scr reader meets the restarted DataNode before it has answered an fd request in time
   * (a dead path admits no open; the first request after the probe's answer is sent from the probe
   * thread), so what remains is scheduling noise of a loaded machine, on either side: on two cores
   * at load 12-46 scr minus stock ranged from -1,397 to +42 ms in 19 of 20 runs (one run +1,145 ms,
   * a stock-path read during the outage, not a wait for the DataNode). The bound leaves room for
   * that noise; the report names each side's slowest reads, when they started, and the margin left.
   */
  static final Duration STOCK_MARGIN = Duration.ofMillis(100);

  static final Duration SLOW_OP87 = Duration.ofMillis(200);

  /**
   * The shortest deadline of a replica open ({@code scr.client.health.deadline.min.ms}, default 200
   * ms), set below {@link #SLOW_OP87} for every client of these tests: the health state is
   * process-wide and the first context to talk to a DataNode sets it, so every test uses the same
   * value. With the default, a DataNode 200 ms slow answers just inside its deadline.
   */
  static final Duration DEADLINE_FLOOR = Duration.ofMillis(100);

  /**
   * How long a reader waits for the local DataNode before it reads another replica ({@code
   * scr.client.health.read.wait.max.ms}), for every client of these tests (the health is
   * process-wide).
   */
  static final Duration READ_WAIT = Duration.ofMillis(100);

  static final int SLOW_BLOCK = 128 * 1024;
  static final int SLOW_BLOCKS = 96;

  private static final AtomicInteger CONTEXTS = new AtomicInteger();

  ProcessHdfs hdfs;
  final Map<String, byte[]> files = new LinkedHashMap<>();
  final Map<String, byte[]> slowFiles = new LinkedHashMap<>();

  abstract ProcessHdfs.LocalMode mode();

  @BeforeAll
  void startHdfs() throws Exception {
    hdfs = ProcessHdfs.start(mode(), BLOCK);
    Random r = new Random(mode().ordinal());
    for (int f = 0; f < FILES; f++) {
      byte[] b = new byte[BLOCK * BLOCKS_PER_FILE];
      r.nextBytes(b);
      String p = "/failover/f" + f;
      hdfs.write(p, b);
      files.put(p, b);
    }
    byte[] small = new byte[SLOW_BLOCK * SLOW_BLOCKS];
    r.nextBytes(small);
    hdfs.write("/failover/small-blocks", small, SLOW_BLOCK);
    slowFiles.put("/failover/small-blocks", small);
  }

  @AfterAll
  void stopHdfs() throws IOException {
    ScrReplicaAccessorBuilder.releaseAll();
    if (hdfs != null) {
      hdfs.close();
    }
  }

  /** A new ScrFileSystem with its own engine (context), prefetch off, stock short-circuit off. */
  ScrFileSystem scrFileSystem() throws IOException {
    Configuration c = hdfs.clientConf();
    c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
    c.set("scr.client.context", "failover-" + CONTEXTS.incrementAndGet());
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.setInt("scr.client.prefetch.max-blocks", 0);
    c.setLong("scr.client.health.deadline.min.ms", DEADLINE_FLOOR.toMillis());
    c.setLong("scr.client.health.read.wait.max.ms", READ_WAIT.toMillis());
    c.setInt("dfs.client.retry.window.base", 10);
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    return (ScrFileSystem) FileSystem.newInstance(hdfs.uri(), c);
  }

  /**
   * The stock {@code DistributedFileSystem} with scr's replica accessor (its own context, stock
   * short-circuit off), as the user guide configures the zero-change drop-in.
   */
  FileSystem accessorFileSystem() throws IOException {
    Configuration c = hdfs.clientConf();
    c.set("dfs.client.replica.accessor.builder.classes", ScrReplicaAccessorBuilder.class.getName());
    c.set("scr.client.context", "failover-accessor-" + CONTEXTS.incrementAndGet());
    c.set("dfs.client.context", "failover-accessor-" + CONTEXTS.get());
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.setLong("scr.client.health.deadline.min.ms", DEADLINE_FLOOR.toMillis());
    c.setLong("scr.client.health.read.wait.max.ms", READ_WAIT.toMillis());
    c.setInt("dfs.client.retry.window.base", 10);
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    return FileSystem.newInstance(hdfs.uri(), c);
  }

  /** The stock client over TCP (no short-circuit, no scr): the reference. */
  FileSystem stockTcp() throws IOException {
    Configuration c = hdfs.clientConf();
    c.setBoolean("dfs.client.read.shortcircuit", false);
    c.setInt("dfs.client.retry.window.base", 10);
    return FileSystem.newInstance(hdfs.uri(), c);
  }

  /**
   * SIGSTOP of the local DataNode for 20 s under readers: no read fails; every first read of a new
   * block, and every later read of it, takes at most 1 s (it goes to another replica instead of
   * waiting for the hung DataNode); reads of replicas opened before the hang stay short-circuit and
   * 99.9 % of them take at most 50 ms; within 2 s of SIGCONT every byte read is short-circuit
   * again. The replica accessor's readers read alongside, through the stock file system: none of
   * their reads fails, each of their reads of a block first read during the hang takes at most 1 s
   * too (the accessor reads it from another replica rather than let stock wait for the DataNode it
   * chose), and their open replicas stay short-circuit.
   */
  @Test
  void hungLocalDataNodeCostsNoFirstReadMoreThanASecond() throws Exception {
    ProcessHdfs.DataNode dn = hdfs.local();
    try (ScrFileSystem fs = scrFileSystem();
        FileSystem accessorFs = accessorFileSystem();
        ReaderLoad load =
            new ReaderLoad(fs, files, BLOCK, 0.5, THREADS, OPEN_REPLICA_THREADS, PAUSE_MICROS);
        ReaderLoad acc = new ReaderLoad(accessorFs, files, BLOCK, 0.5, 2, 1, PAUSE_MICROS)) {
      load.warm();
      acc.warm();
      load.start("hang");
      acc.start("hang-accessor");
      TimeUnit.SECONDS.sleep(1);
      long stopped = System.nanoTime();
      dn.stop();
      long resumed;
      try {
        // one new block first read every HANG / cold blocks: early and late in the hang
        long step = HANG.toNanos() / load.coldBlockCount();
        for (int i = 0; i < load.coldBlockCount(); i++) {
          load.release(1);
          acc.release(1);
          TimeUnit.NANOSECONDS.sleep(step);
        }
      } finally {
        resumed = System.nanoTime();
        dn.resume();
      }
      long recovered = resumed + RECOVERY.toNanos();
      TimeUnit.NANOSECONDS.sleep(RECOVERY.toNanos() + TimeUnit.SECONDS.toNanos(2));
      long end = System.nanoTime();
      load.stop();
      acc.stop();

      List<Sample> firstAndLater =
          load.samples(stopped, resumed, s -> s.kind == Kind.FIRST || s.kind == Kind.COLD);
      List<Sample> open = load.samples(stopped, resumed, s -> s.kind == Kind.WARM);
      List<Sample> afterRecovery = load.samples(recovered, end, s -> true);
      int firstReads = load.samples(stopped, resumed, s -> s.kind == Kind.FIRST).size();
      Sample slowestNew = ReaderLoad.slowest(firstAndLater);
      Sample slowestOpen = ReaderLoad.slowest(open);
      List<Sample> accNew =
          acc.samples(stopped, resumed, s -> s.kind == Kind.FIRST || s.kind == Kind.COLD);
      List<Sample> accOpen = acc.samples(stopped, resumed, s -> s.kind == Kind.WARM);
      Sample accSlowestNew = ReaderLoad.slowest(accNew);
      String report =
          String.format(
              "%s: hang %d s, %d first reads during it; slowest new-block read %s; first reads:"
                  + " median %.1f ms, 3 slowest %s; slowest open-replica read %s; open replicas"
                  + " during the hang: %s; reads started %d s or more after SIGCONT: %s; not"
                  + " short-circuit: %s; accessor: %d first reads, median %.1f ms, 3 slowest %s,"
                  + " slowest new-block read %s, open replicas %s",
              mode(),
              HANG.toSeconds(),
              firstReads,
              slowestNew,
              ReaderLoad.quantileNanos(
                      load.samples(stopped, resumed, s -> s.kind == Kind.FIRST), 0.5)
                  / 1e6,
              slowest(load.samples(stopped, resumed, s -> s.kind == Kind.FIRST), 3, stopped),
              slowestOpen,
              ReaderLoad.bytes(open),
              RECOVERY.toSeconds(),
              ReaderLoad.bytes(afterRecovery),
              notShortCircuit(afterRecovery, resumed),
              acc.samples(stopped, resumed, s -> s.kind == Kind.FIRST).size(),
              ReaderLoad.quantileNanos(
                      acc.samples(stopped, resumed, s -> s.kind == Kind.FIRST), 0.5)
                  / 1e6,
              slowest(acc.samples(stopped, resumed, s -> s.kind == Kind.FIRST), 3, stopped),
              accSlowestNew,
              ReaderLoad.bytes(accOpen));
      System.out.println(report);
      assertAll(
          report,
          noFailures(load),
          noFailures(acc),
          () ->
              assertTrue(
                  accSlowestNew.nanos <= FIRST_READ_LIMIT.toNanos(),
                  "an accessor read of a block first read during the hang took " + accSlowestNew),
          () ->
              assertEquals(
                  "",
                  notShortCircuit(accOpen, stopped),
                  "accessor reads of replicas open before the hang that were not short-circuit"),
          () ->
              assertEquals(load.coldBlockCount(), firstReads, "new blocks first read in the hang"),
          () ->
              assertTrue(
                  slowestNew.nanos <= FIRST_READ_LIMIT.toNanos(),
                  "a read of a block first read during the hang took " + slowestNew),
          () ->
              assertTrue(
                  ReaderLoad.quantileNanos(open, OPEN_REPLICA_QUANTILE)
                      <= OPEN_REPLICA_LIMIT.toNanos(),
                  "reads of replicas open before the hang: the "
                      + OPEN_REPLICA_QUANTILE
                      + " quantile took more than "
                      + OPEN_REPLICA_LIMIT.toMillis()
                      + " ms (slowest "
                      + slowestOpen
                      + ")"),
          () ->
              assertEquals(
                  "",
                  notShortCircuit(open, stopped),
                  "reads of replicas open before the hang that were not short-circuit"),
          () ->
              assertEquals(
                  "",
                  notShortCircuit(afterRecovery, resumed),
                  "reads started "
                      + RECOVERY.toSeconds()
                      + " s or more after SIGCONT that were not short-circuit"));
    }
  }

  /**
   * The reads among {@code samples} that were not all short-circuit (at most five, with when each
   * started after {@code sinceNanos}), or "" when there are none.
   */
  private static String notShortCircuit(List<Sample> samples, long sinceNanos) {
    StringBuilder sb = new StringBuilder();
    int n = 0;
    for (Sample s : samples) {
      if (!s.shortCircuit()) {
        if (n++ < 5) {
          sb.append(sb.length() == 0 ? "" : "; ")
              .append(s)
              .append(" at +")
              .append(TimeUnit.NANOSECONDS.toMillis(s.startNanos - sinceNanos))
              .append(" ms");
        }
      }
    }
    return n > 5 ? n + " reads: " + sb + "; ..." : sb.toString();
  }

  /**
   * kill -9 of the local DataNode under readers, stock TCP readers alongside as the reference, then
   * the DataNode restarted on its port: no read fails, bytes identical, no scr read waits longer
   * than stock's slowest, and replicas opened before the kill keep reading short-circuit while the
   * DataNode is dead (share at least 95 %).
   */
  @Test
  void killedLocalDataNodeWaitsNoLongerThanStockAndOpenReplicasStayShortCircuit() throws Exception {
    ProcessHdfs.DataNode dn = hdfs.local();
    try (ScrFileSystem fs = scrFileSystem();
        FileSystem stock = stockTcp();
        FileSystem accessorFs = accessorFileSystem();
        ReaderLoad scr =
            new ReaderLoad(fs, files, BLOCK, 0.5, THREADS, OPEN_REPLICA_THREADS, PAUSE_MICROS);
        ReaderLoad tcp =
            new ReaderLoad(stock, files, BLOCK, 0.5, THREADS, OPEN_REPLICA_THREADS, PAUSE_MICROS);
        ReaderLoad acc = new ReaderLoad(accessorFs, files, BLOCK, 0.5, 2, 1, PAUSE_MICROS)) {
      scr.warm();
      tcp.warm();
      acc.warm();
      scr.start("kill-scr");
      tcp.start("kill-stock");
      acc.start("kill-accessor");
      TimeUnit.SECONDS.sleep(1);
      long killed = System.nanoTime();
      dn.kill();
      long step = OUTAGE.toNanos() / scr.coldBlockCount();
      for (int i = 0; i < scr.coldBlockCount(); i++) {
        scr.release(1);
        tcp.release(1);
        acc.release(1);
        TimeUnit.NANOSECONDS.sleep(step);
      }
      long restarting = System.nanoTime();
      dn.restart();
      dn.awaitServing();
      TimeUnit.SECONDS.sleep(1);
      long end = System.nanoTime();
      scr.stop();
      tcp.stop();
      acc.stop();

      Sample slowestScr = ReaderLoad.slowest(scr.samples(killed, end, s -> true));
      Sample slowestStock = ReaderLoad.slowest(tcp.samples(killed, end, s -> true));
      Bytes duringOutage =
          ReaderLoad.bytes(scr.samples(killed, restarting, s -> s.kind == Kind.WARM));
      double share = duringOutage.share();
      String report =
          String.format(
              "%s: kill -9, %d s outage, restart %d ms from +%d ms; slowest scr read %s; slowest"
                  + " stock TCP read %s; open replicas during the outage: %s; scr's 3 slowest"
                  + " (from the kill): %s; stock's: %s",
              mode(),
              OUTAGE.toSeconds(),
              TimeUnit.NANOSECONDS.toMillis(end - restarting) - 1000,
              TimeUnit.NANOSECONDS.toMillis(restarting - killed),
              slowestScr,
              slowestStock,
              duringOutage,
              slowest(scr.samples(killed, end, s -> true), 3, killed),
              slowest(tcp.samples(killed, end, s -> true), 3, killed));
      System.out.println(
          report
              + "; "
              + margin(slowestScr, slowestStock)
              + "; "
              + accessorReport(acc, killed, restarting, end));
      assertAll(
          report,
          noFailures(scr),
          noFailures(tcp),
          noFailures(acc),
          () ->
              assertTrue(
                  slowestScr.nanos <= slowestStock.nanos + STOCK_MARGIN.toNanos(),
                  "scr's slowest read " + slowestScr + " vs stock's " + slowestStock),
          () ->
              assertTrue(
                  share >= 0.95,
                  "short-circuit share of replicas open before the kill, during the outage: "
                      + share));
    }
  }

  /**
   * SIGTERM of the local DataNode (a rolling restart) under readers, stock TCP readers alongside as
   * the reference, then the DataNode started again: no read fails, bytes identical, no scr read
   * waits longer than stock's slowest (plus {@link #STOCK_MARGIN}), and replicas opened before it
   * went down keep reading short-circuit until it is back (share at least 95 %).
   */
  @Test
  void restartedLocalDataNodeWaitsNoLongerThanStockAndKeepsOpenReplicasShortCircuit()
      throws Exception {
    ProcessHdfs.DataNode dn = hdfs.local();
    try (ScrFileSystem fs = scrFileSystem();
        FileSystem stock = stockTcp();
        ReaderLoad load =
            new ReaderLoad(fs, files, BLOCK, 0.5, THREADS, OPEN_REPLICA_THREADS, PAUSE_MICROS);
        ReaderLoad tcp =
            new ReaderLoad(stock, files, BLOCK, 0.5, THREADS, OPEN_REPLICA_THREADS, PAUSE_MICROS);
        FileSystem accessorFs = accessorFileSystem();
        ReaderLoad acc = new ReaderLoad(accessorFs, files, BLOCK, 0.5, 2, 1, PAUSE_MICROS)) {
      load.warm();
      tcp.warm();
      acc.warm();
      load.start("restart-scr");
      tcp.start("restart-stock");
      acc.start("restart-accessor");
      TimeUnit.SECONDS.sleep(1);
      long terminated = System.nanoTime();
      dn.terminate();
      long step = OUTAGE.toNanos() / load.coldBlockCount();
      for (int i = 0; i < load.coldBlockCount(); i++) {
        load.release(1);
        tcp.release(1);
        acc.release(1);
        TimeUnit.NANOSECONDS.sleep(step);
      }
      dn.restart();
      dn.awaitServing();
      long back = System.nanoTime();
      TimeUnit.SECONDS.sleep(2);
      long end = System.nanoTime();
      load.stop();
      tcp.stop();
      acc.stop();
      Bytes whileDown = ReaderLoad.bytes(load.samples(terminated, back, s -> s.kind == Kind.WARM));
      double share = whileDown.share();
      Sample slowestScr = ReaderLoad.slowest(load.samples(terminated, end, s -> true));
      Sample slowestStock = ReaderLoad.slowest(tcp.samples(terminated, end, s -> true));
      String report =
          String.format(
              "%s: SIGTERM restart, back at +%d ms; slowest scr read %s; slowest stock TCP read"
                  + " %s; open replicas while it was down: %s; scr's 3 slowest (from SIGTERM): %s;"
                  + " stock's: %s",
              mode(),
              TimeUnit.NANOSECONDS.toMillis(back - terminated),
              slowestScr,
              slowestStock,
              whileDown,
              slowest(load.samples(terminated, end, s -> true), 3, terminated),
              slowest(tcp.samples(terminated, end, s -> true), 3, terminated));
      System.out.println(
          report
              + "; "
              + margin(slowestScr, slowestStock)
              + "; "
              + accessorReport(acc, terminated, back, end));
      assertAll(
          report,
          noFailures(load),
          noFailures(tcp),
          noFailures(acc),
          () ->
              assertTrue(
                  slowestScr.nanos <= slowestStock.nanos + STOCK_MARGIN.toNanos(),
                  "scr's slowest read " + slowestScr + " vs stock's " + slowestStock),
          () ->
              assertTrue(
                  share >= 0.95,
                  "short-circuit share of replicas open before SIGTERM, until the DataNode was"
                      + " back: "
                      + share));
    }
  }

  /**
   * The replica accessor's readers around a death and a return, for the report: their slowest read
   * from the fault on and the short-circuit share of their open replicas until {@code backNanos}.
   */
  private static String accessorReport(ReaderLoad acc, long faultNanos, long backNanos, long end) {
    return String.format(
        "accessor: slowest read %s; open replicas until it was back: %s",
        ReaderLoad.slowest(acc.samples(faultNanos, end, s -> true)),
        ReaderLoad.bytes(acc.samples(faultNanos, backNanos, s -> s.kind == Kind.WARM)));
  }

  /** What is left of {@link #STOCK_MARGIN} (negative: exceeded), for the report. */
  private static String margin(Sample scr, Sample stock) {
    long scrMs = TimeUnit.NANOSECONDS.toMillis(scr.nanos);
    long stockMs = TimeUnit.NANOSECONDS.toMillis(stock.nanos);
    return String.format(
        "scr minus stock %+d ms, margin left %d ms of %d",
        scrMs - stockMs, stockMs + STOCK_MARGIN.toMillis() - scrMs, STOCK_MARGIN.toMillis());
  }

  /**
   * The local DataNode answers every short-circuit fd request (op 87) 200 ms late while readers
   * first read 96 new blocks: the p99 of those first reads stays under the DataNode's delay (a slow
   * DataNode is read around like a hung one once it misses its deadline; the readers pay at most
   * the deadline, never the DataNode's full delay on every new block).
   */
  @Test
  void slowLocalDataNodeDoesNotSlowReadersP99() throws Exception {
    ProcessHdfs.DataNode dn = hdfs.local();
    try (ScrFileSystem fs = scrFileSystem();
        ReaderLoad load =
            new ReaderLoad(fs, slowFiles, SLOW_BLOCK, 0.0, THREADS, 0, PAUSE_MICROS)
                .laterReadsPerFirst(9)) {
      dn.delayFdRequests(SLOW_OP87);
      long start = System.nanoTime();
      try {
        load.start("slow");
        load.release(load.coldBlockCount());
        Faults.await(
            "every new block to be read",
            Duration.ofSeconds(90),
            () -> load.firstReadsDone() == load.coldBlockCount());
      } finally {
        dn.delayFdRequests(Duration.ZERO);
      }
      long end = System.nanoTime();
      load.stop();
      List<Sample> all = load.samples(start, end, s -> true);
      List<Sample> first = load.samples(start, end, s -> s.kind == Kind.FIRST);
      long p99 = ReaderLoad.quantileNanos(all, 0.99);
      String report =
          String.format(
              "%s: op 87 delayed %d ms; %d reads, p99 %.1f ms; %d first reads of new blocks:"
                  + " median %.1f ms, slowest %s; slowest 12: %s",
              mode(),
              SLOW_OP87.toMillis(),
              all.size(),
              p99 / 1e6,
              first.size(),
              ReaderLoad.quantileNanos(first, 0.5) / 1e6,
              ReaderLoad.slowest(first),
              slowest(all, 12, start));
      System.out.println(report);
      assertAll(
          report,
          noFailures(load),
          () -> assertEquals(load.coldBlockCount(), first.size(), "first reads"),
          () ->
              assertTrue(
                  p99 < SLOW_OP87.toNanos(),
                  "readers' p99 "
                      + p99 / 1e6
                      + " ms reaches the DataNode's delay of "
                      + SLOW_OP87.toMillis()
                      + " ms"));
    }
  }

  /**
   * The {@code n} slowest of {@code samples}, each with when it started after {@code sinceNanos}.
   */
  private static String slowest(List<Sample> samples, int n, long sinceNanos) {
    StringBuilder sb = new StringBuilder();
    samples.stream()
        .sorted((a, b) -> Long.compare(b.nanos, a.nanos))
        .limit(n)
        .forEach(
            s ->
                sb.append(sb.length() == 0 ? "" : "; ")
                    .append(s)
                    .append(" at +")
                    .append(TimeUnit.NANOSECONDS.toMillis(s.startNanos - sinceNanos))
                    .append(" ms"));
    return sb.toString();
  }

  private static Executable noFailures(ReaderLoad load) {
    return () -> {
      List<Sample> failed = load.failures();
      assertTrue(
          failed.isEmpty(),
          failed.size()
              + " reads failed, first: "
              + (failed.isEmpty() ? "" : failed.subList(0, Math.min(5, failed.size()))));
    };
  }
}
