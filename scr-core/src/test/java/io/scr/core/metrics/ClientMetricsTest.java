package io.scr.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.shm.ShmSupport;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.newsclub.net.unix.AFUNIXSocket;

/**
 * The client's counters under a scripted workload against a stock DataNode (mode A): every read,
 * byte, open, fallback, connect failure and checksum failure shows up, per path and in total, in
 * the snapshot and through JMX; the source goes away with the engine.
 */
class ClientMetricsTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK;

  static {
    // Process-wide singletons (Cleaner threads, native probes) before the leak baseline.
    try {
      ShmSupport.isAvailable();
      Class.forName("io.scr.shm.Segment");
      Class.forName("io.scr.shm.SharedMemoryFd");
      AFUNIXSocket.newInstance().close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  @BeforeAll
  static void write() throws Exception {
    DFS.dfs().writeRandomFile("/m", LEN, 1);
    DFS.dfs().writeRandomFile("/n", 4096, 3);
    byte[] c = DFS.dfs().writeRandomFile("/c", 4096, 2);
    byte[] flipped = new byte[512];
    for (int i = 0; i < flipped.length; i++) {
      flipped[i] = (byte) ~c[i];
    }
    LocatedBlock corrupt = blocks("/c", 4096).get(0);
    DFS.dfs().cluster().getMaterializedReplica(0, corrupt.getBlock()).corruptData(flipped);
  }

  private static List<LocatedBlock> blocks(String path, long len) throws Exception {
    DistributedFileSystem fs = DFS.dfs().fileSystem();
    return fs.getClient().getLocatedBlocks(path, 0, len).getLocatedBlocks();
  }

  private static Configuration conf(String context) {
    Configuration c = DFS.dfs().clientConf();
    c.set("scr.client.context", context);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    // The scripted counts assume every slot allocation succeeds; a loaded CI machine must not
    // turn a slow segment fetch into a timeout that changes them.
    c.setLong("scr.client.slot-pool.max-allocation-wait", 30_000);
    return c;
  }

  @Test
  void countersFollowAScriptedWorkload() throws Exception {
    String context = "metrics-workload";
    Engine client = Engine.acquire(conf(context));
    String missing = DFS.dfs().socketDir().resolve("missing.sock").toString();
    String socket = DFS.dfs().socketPath(0);
    try {
      ClientSnapshot before = client.metricsSnapshot();
      assertEquals(0, before.shortCircuitBytes());
      assertEquals(0, before.fallbackTotal());

      // 2 blocks x 10 reads of 4 KiB, each read its own lease: 2 misses, 18 hits.
      long bytes = 0;
      int reads = 0;
      for (LocatedBlock lb : blocks("/m", LEN)) {
        String path = client.socketPathFor(lb.getLocations()[0]);
        assertEquals(socket, path);
        for (int i = 0; i < 10; i++) {
          try (ReplicaLease lease =
              client.lease(lb.getBlock(), lb.getBlockToken(), path, null, null)) {
            assertNotNull(lease);
            int n = lease.read(i * 4096L, new byte[4096], 0, 4096, true);
            assertEquals(4096, n);
            bytes += n;
            reads++;
            assertEquals(-1, lease.read(lease.length(), new byte[1], 0, 1, true), "EOF");
          }
        }
      }
      // A socket that does not exist (a block not cached yet): one connect failure, then the
      // path backs off.
      LocatedBlock other = blocks("/n", 4096).get(0);
      assertNull(client.lease(other.getBlock(), other.getBlockToken(), missing, null, null));
      assertNull(client.lease(other.getBlock(), other.getBlockToken(), missing, null, null));
      // A corrupt replica: the checksum failure is counted against its path.
      LocatedBlock bad = blocks("/c", 4096).get(0);
      try (ReplicaLease lease =
          client.lease(bad.getBlock(), bad.getBlockToken(), socket, null, null)) {
        assertThrows(ChecksumException.class, () -> lease.read(0, new byte[512], 0, 512, true));
      }

      ClientSnapshot s = client.metricsSnapshot();
      assertEquals(reads, s.shortCircuitReads());
      assertEquals(bytes, s.shortCircuitBytes());
      assertEquals(1, s.checksumFailures());
      assertEquals(1, s.fallbacks().get(FallbackReason.CONNECT_FAILED));
      assertEquals(1, s.fallbacks().get(FallbackReason.BACKING_OFF));
      assertEquals(2, s.fallbackTotal());
      assertEquals(18, s.cache().hitCount());
      assertEquals(4, s.cache().missCount(), "2 blocks, the corrupt one, the missing socket");
      assertTrue(s.socketConnectFailures() >= 1, "connect failures " + s.socketConnectFailures());
      assertTrue(s.socketConnects() >= 1, "connects " + s.socketConnects());
      assertEquals(1, s.pathsBackingOff());
      assertTrue(s.processOpenFds() > 0 && s.processFdLimit() >= s.processOpenFds());
      ClientSnapshot.PathFigures p = path(s, socket);
      assertEquals(reads, p.reads());
      assertEquals(bytes, p.bytes());
      assertEquals(3, p.opens());
      assertEquals(1, p.checksumFailures());
      assertEquals(4, s.replicaOpenLatency().count(), "3 opens + 1 failed open");
      assertTrue(s.replicaOpenLatency().p50Nanos() > 0);
      assertTrue(s.replicaOpenLatency().p99Nanos() >= s.replicaOpenLatency().p50Nanos());
      if (ShmSupport.isAvailable()) {
        // Each of the 3 opens through the live socket either got a slot or gave up waiting.
        long attempts = 0;
        for (io.scr.shm.SlotPoolStats sp : s.slotPools()) {
          if (sp.poolName().endsWith("@" + socket)) {
            attempts += sp.allocations() + sp.allocationTimeouts();
          }
        }
        assertEquals(3, attempts, s.slotPools().toString());
      }

      // The same figures as a metrics2 sink sees them: the source registered in the metrics
      // system, one totals record and one record per path.
      String source = ScrClientMetrics.sourceName(context);
      RecordingCollector rc = new RecordingCollector();
      org.apache.hadoop.metrics2.lib.DefaultMetricsSystem.instance()
          .getSource(source)
          .getMetrics(rc, true);
      RecordingCollector.Rec total = rc.named(ClientMetric.RECORD).get(0);
      assertEquals(context, total.tags.get("Context"));
      assertEquals(bytes, total.counter("ShortCircuitBytes"));
      assertEquals(reads, total.counter("ShortCircuitReads"));
      assertEquals(1, total.counter("FallbackConnectFailed"));
      assertEquals(1, total.counter("FallbackBackingOff"));
      assertEquals(0, total.counter("FallbackNotLocal"));
      assertEquals(1, total.counter("ChecksumFailures"));
      assertEquals(18, total.counter("CacheHits"));
      assertEquals(4, total.counter("CacheMisses"));
      assertEquals(100.0 * 18 / 22, total.gauge("CacheHitPercent"), 1e-9);
      assertEquals(3, total.counter("ReplicaOpens"));
      // Background segment fetches may still be failing against the missing path: monotonic.
      assertTrue(total.counter("SocketConnectFailures") >= s.socketConnectFailures());
      assertEquals(1, total.gauge("PathsBackingOff"));
      assertTrue(total.gauge("ReplicaOpenLatencyP99Micros") >= 1, "open p99 in micros");
      assertTrue(total.gauge("ProcessFdLimit") >= total.gauge("ProcessOpenFds"));
      assertEquals(
          ClientMetric.names(false).size(),
          total.counters.size() + total.gauges.size(),
          "every catalogued metric, once");
      List<RecordingCollector.Rec> perPath = rc.named(ClientMetric.PATH_RECORD);
      boolean sawSocket = false;
      boolean sawMissing = false;
      for (RecordingCollector.Rec r : perPath) {
        assertEquals(ClientMetric.names(true).size(), r.counters.size() + r.gauges.size());
        if (r.tags.get("Path").equals(socket)) {
          sawSocket = true;
          assertEquals(bytes, r.counter("ShortCircuitBytes"));
          assertEquals(3, r.counter("ReplicaOpens"));
          assertEquals(1, r.counter("ChecksumFailures"));
          assertEquals(0, r.gauge("BackingOff"));
        } else if (r.tags.get("Path").equals(missing)) {
          sawMissing = true;
          assertEquals(0, r.counter("ShortCircuitBytes"));
          assertEquals(1, r.gauge("BackingOff"));
          assertTrue(r.gauge("BackoffRemainingMs") > 0);
          assertTrue(r.counter("FailuresConnect") >= 1);
        }
      }
      assertTrue(sawSocket && sawMissing, "both paths have records: " + perPath.size());

      // JMX: the bean exists under the documented name (values refresh on the metrics period).
      MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
      Set<ObjectName> names =
          mbs.queryNames(new ObjectName("Hadoop:service=*,name=" + source), null);
      assertEquals(1, names.size(), "JMX bean: " + names);
      ObjectName bean = names.iterator().next();
      assertEquals(context, mbs.getAttribute(bean, "tag.Context"));
      assertTrue(mbs.getAttribute(bean, "ShortCircuitBytes") instanceof Number);
    } finally {
      client.close();
    }
    MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    assertTrue(
        mbs.queryNames(new ObjectName("Hadoop:service=*,name=ScrClient-" + context), null)
            .isEmpty(),
        "the last close unregisters the source");
    // The name is free again for a new engine of the same context.
    Engine again = Engine.acquire(conf(context));
    try {
      assertFalse(
          mbs.queryNames(new ObjectName("Hadoop:service=*,name=ScrClient-" + context), null)
              .isEmpty());
      assertEquals(0, again.metricsSnapshot().shortCircuitBytes(), "a new engine starts at 0");
    } finally {
      again.close();
    }
  }

  @Test
  void summaryLineReportsEachInterval() throws Exception {
    String context = "metrics-summary";
    Engine client = Engine.acquire(conf(context));
    String socket = DFS.dfs().socketPath(0);
    String missing = DFS.dfs().socketDir().resolve("absent.sock").toString();
    try {
      LocatedBlock lb = blocks("/m", LEN).get(1);
      ClientSnapshot a = client.metricsSnapshot();
      for (int i = 0; i < 5; i++) {
        try (ReplicaLease lease =
            client.lease(lb.getBlock(), lb.getBlockToken(), socket, null, null)) {
          assertEquals(4096, lease.read(0, new byte[4096], 0, 4096, false));
        }
      }
      ClientSnapshot b = client.metricsSnapshot();
      String quiet = SummaryLine.format(a, b);
      assertTrue(quiet.startsWith("scr[metrics-summary]: hit 80.0%, evictions 0/s, fds "), quiet);
      double seconds = (b.takenAtNanos - a.takenAtNanos) / 1e9;
      assertTrue(
          quiet.contains("short-circuit " + SummaryLine.bytesPerSecond(5 * 4096 / seconds)), quiet);
      assertTrue(quiet.endsWith(", fallback 0 (—)"), quiet);
      // One replica: its block fd, plus its meta fd unless the meta file is mapped (then closed).
      long replicaFds = b.cache().openFds();
      assertTrue(replicaFds == 1 || replicaFds == 2, "one replica's fds: " + replicaFds);
      assertTrue(quiet.contains(" (cache " + replicaFds + "/"), quiet);

      LocatedBlock other = blocks("/n", 4096).get(0);
      assertNull(client.lease(other.getBlock(), other.getBlockToken(), missing, null, null));
      String troubled = SummaryLine.format(b, client.metricsSnapshot());
      assertTrue(troubled.contains("hit 0.0%"), troubled);
      assertTrue(troubled.contains("fallback 1 (CONNECT_FAILED 1)"), troubled);
      assertTrue(troubled.contains("backing off " + missing + " CONNECT "), troubled);
      assertFalse(troubled.contains("\n"), "one line");

      // The reporter: one line per interval from its own daemon thread, gone after close.
      List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
      java.util.concurrent.CountDownLatch two = new java.util.concurrent.CountDownLatch(2);
      SummaryReporter reporter =
          SummaryReporter.start(
              context,
              client::metricsSnapshot,
              line -> {
                lines.add(line);
                two.countDown();
              },
              java.time.Duration.ofMillis(20));
      try {
        assertTrue(two.await(30, java.util.concurrent.TimeUnit.SECONDS), "two lines: " + lines);
      } finally {
        reporter.close();
      }
      assertTrue(lines.get(0).startsWith("scr[metrics-summary]: hit "), lines.get(0));
      assertTrue(
          Thread.getAllStackTraces().keySet().stream()
              .noneMatch(t -> t.getName().equals("scr-summary-" + context) && t.isAlive()),
          "reporter thread stopped");
    } finally {
      client.close();
    }
  }

  @Test
  void summaryIsOnByDefaultAndOffAtZero() throws Exception {
    Configuration on = conf("summary-on");
    on.unset("scr.metrics.summary.interval.seconds");
    Engine client = Engine.acquire(on);
    try {
      assertTrue(summaryThreadAlive("summary-on"), "default interval 60 s starts a reporter");
    } finally {
      client.close();
    }
    assertFalse(summaryThreadAlive("summary-on"), "close stops it");
    Engine off = Engine.acquire(conf("summary-off"));
    try {
      assertFalse(summaryThreadAlive("summary-off"), "0 = no reporter thread");
    } finally {
      off.close();
    }
  }

  private static boolean summaryThreadAlive(String context) {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().equals("scr-summary-" + context) && t.isAlive());
  }

  @Test
  void metricsCanBeSwitchedOff() throws Exception {
    Configuration c = conf("metrics-off");
    c.setBoolean("scr.metrics.enabled", false);
    Engine client = Engine.acquire(c);
    try {
      assertTrue(
          ManagementFactory.getPlatformMBeanServer()
              .queryNames(new ObjectName("Hadoop:service=*,name=ScrClient-metrics-off"), null)
              .isEmpty());
    } finally {
      client.close();
    }
  }

  private static ClientSnapshot.PathFigures path(ClientSnapshot s, String path) {
    for (ClientSnapshot.PathFigures p : s.paths()) {
      if (p.path().equals(path)) {
        return p;
      }
    }
    throw new AssertionError("no figures for " + path + " in " + s.paths());
  }
}
