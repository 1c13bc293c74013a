package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.Segment;
import io.scr.shm.ShmId;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import java.io.FileInputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm.SlotId;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsTag;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;
import org.apache.hadoop.test.GenericTestUtils.LogCapturer;
import org.apache.hadoop.util.ServicePlugin;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shim's metrics2 source and the DataNode's own books under a scripted workload, then the JMX
 * bean's lifetime. Its own cluster: a per-client slot limit of 2 makes rejections reachable.
 */
class ShimMetricsClusterTest {
  static final int MAX_SLOTS = 2;

  static {
    JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(256 * 1024)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setInt(ScrShimKeys.CLIENT_MAX_SLOTS.name(), MAX_SLOTS))
          .buildExtension();

  @BeforeAll
  static void stockPeerNeedsLibhadoop() {
    StockNative.requireAvailable();
  }

  static DataNode dataNode() {
    return DFS.dfs().cluster().getDataNodes().get(0);
  }

  static ScrShimPlugin plugin(DataNode dn) throws ReflectiveOperationException {
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof ScrShimPlugin shim) {
        return shim;
      }
    }
    throw new AssertionError("no ScrShimPlugin in " + plugins);
  }

  /** Every metric of the source's record, by name, as a sink would receive it. */
  static Map<String, Number> collect(ShimMetricsSource source) {
    Map<String, Number> values = new HashMap<>();
    Map<String, String> tags = new HashMap<>();
    MetricsCollector collector =
        new MetricsCollector() {
          @Override
          public MetricsRecordBuilder addRecord(String name) {
            assertEquals(ShimMetric.RECORD, name);
            return new Flat(values, tags, this);
          }

          @Override
          public MetricsRecordBuilder addRecord(MetricsInfo info) {
            return addRecord(info.name());
          }
        };
    source.getMetrics(collector, true);
    assertEquals(Integer.toString(dataNode().getXferPort()), tags.get("Port"));
    return values;
  }

  static long diff(Map<String, Number> after, Map<String, Number> before, String name) {
    assertNotNull(after.get(name), "no metric " + name + " in " + after.keySet());
    return after.get(name).longValue() - before.get(name).longValue();
  }

  static long blocksGetLocalPathInfo(DataNode dn) throws ReflectiveOperationException {
    Field f = DataNodeMetrics.class.getDeclaredField("blocksGetLocalPathInfo");
    f.setAccessible(true);
    return ((MutableCounterLong) f.get(dn.getMetrics())).value();
  }

  static int count(String text, String needle) {
    int n = 0;
    for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
      n++;
    }
    return n;
  }

  static String trace(DataNode dn, ExtendedBlock b, boolean success) throws Exception {
    return String.format(
        DataNodeAccounting.TRACE_FORMAT,
        b.getBlockId(),
        dn.getDNRegistrationForBP(b.getBlockPoolId()).getDatanodeUuid(),
        success);
  }

  @Test
  void countersMoveUnderAScriptedWorkloadAndTheBeanLeavesWithTheDataNode() throws Exception {
    DataNode dn = dataNode();
    ScrShimPlugin plugin = plugin(dn);
    assertTrue(plugin.awaitServing(30_000), "shim not serving: " + plugin.failure());
    ShimMetricsSource source = plugin.metricsSource();
    assertEquals("ScrShim-" + dn.getXferPort(), source.sourceName());
    MBeanServer mbs = ManagementFactory.getPlatformMBeanServer();
    ObjectName bean = new ObjectName("Hadoop:service=DataNode,name=" + source.sourceName());
    assertTrue(mbs.isRegistered(bean), "JMX bean " + bean + " while serving");
    assertTrue(mbs.getAttribute(bean, "LiveSegments") instanceof Number);
    // MiniDfs clusters run the test plugin, which trusts the temporary directory above the socket
    // directory: visible, not silent.
    assertEquals(1, ((Number) mbs.getAttribute(bean, "SocketPathCheckSkipped")).intValue());
    assertEquals(1L, plugin.counters().get("socket_path_check_skipped"));

    String socket = DFS.dfs().socketPath(0);
    DFS.dfs().writeRandomFile("/metrics/a", 10_000, 1);
    DFS.dfs().writeRandomFile("/metrics/b", 20_000, 2);
    LocatedBlock a = DFS.dfs().fileSystem().getClient().getLocatedBlocks("/metrics/a", 0).get(0);
    LocatedBlock b = DFS.dfs().fileSystem().getClient().getLocatedBlocks("/metrics/b", 0).get(0);
    ExtendedBlock unknown =
        new ExtendedBlock(a.getBlock().getBlockPoolId(), a.getBlock().getBlockId() + 1_000_000);
    unknown.setGenerationStamp(a.getBlock().getGenerationStamp());

    org.apache.log4j.Logger traceLogger =
        LogManager.getLogger(DataNodeAccounting.CLIENT_TRACE.getName());
    Level level = traceLogger.getLevel();
    traceLogger.setLevel(Level.INFO);
    LogCapturer traces = LogCapturer.captureLogs(DataNodeAccounting.CLIENT_TRACE);
    Map<String, Number> before = collect(source);
    long pathInfoBefore = blocksGetLocalPathInfo(dn);
    long[] shmIdSeen = new long[2];
    Map<String, Number> after;
    try (RawPeer shmPeer = new RawPeer(socket)) {
      // op 89: one segment, one fd.
      shmPeer.sender.requestShortCircuitShm("metrics-test");
      ShortCircuitShmResponseProto shm = shmPeer.readShmResponse();
      assertEquals(Status.SUCCESS, shm.getStatus(), shm.toString());
      FileInputStream[] shmFd = new FileInputStream[1];
      shmPeer.receiveFds(shmFd);
      ShmId id = ShmId.of(shm.getId().getHi(), shm.getId().getLo());
      shmIdSeen[0] = id.hi();
      shmIdSeen[1] = id.lo();
      ShortCircuitShm.ShmId stockId = new ShortCircuitShm.ShmId(id.hi(), id.lo());
      try (Segment seg = Segment.map(id, shmFd[0].getFD(), 8192)) {
        shmFd[0].close();
        try (RawPeer p = new RawPeer(socket)) {
          // op 87 with a slot and the receipt, then op 88: one success each, two fds.
          seg.slot(0).makeValid();
          SlotId slot0 = new SlotId(stockId, 0);
          p.sender.requestShortCircuitFds(a.getBlock(), a.getBlockToken(), slot0, 1, true);
          assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
          FileInputStream[] fds = new FileInputStream[2];
          assertEquals(1, p.receiveFds(fds));
          RawPeer.closeAll(fds);
          p.socket.getOutputStream().write(0);
          p.sender.releaseShortCircuitFds(slot0);
          assertEquals(Status.SUCCESS, p.readReleaseResponse().getStatus());

          // op 87 for a block the DataNode does not have: ERROR.
          p.sender.requestShortCircuitFds(unknown, a.getBlockToken(), null, 1, false);
          assertEquals(Status.ERROR, p.readBlockOpResponse().getStatus());

          // Three slots against a limit of two: the third is refused by the per-client limit.
          for (int i = 1; i <= MAX_SLOTS + 1; i++) {
            seg.slot(i).makeValid();
            p.sender.requestShortCircuitFds(
                b.getBlock(), b.getBlockToken(), new SlotId(stockId, i), 1, false);
            BlockOpResponseProto r = p.readBlockOpResponse();
            if (i <= MAX_SLOTS) {
              assertEquals(Status.SUCCESS, r.getStatus(), r.toString());
              FileInputStream[] more = new FileInputStream[2];
              assertEquals(0, p.receiveFds(more));
              RawPeer.closeAll(more);
            } else {
              assertEquals(Status.ERROR, r.getStatus());
              assertTrue(
                  r.getMessage().contains(ScrShimKeys.CLIENT_MAX_SLOTS.name()), r.getMessage());
            }
          }
          // The last reply reached us before the event loop booked it: ask once more (HELLO),
          // whose answer is sent only after the previous request was finished.
          p.writeRaw(ShimClusterTest.extensionFrame(ShortCircuitService.EXT_HELLO));
          assertEquals(Status.SUCCESS, p.readBlockOpResponse().getStatus());
          after = collect(source);
          assertEquals(2, diff(after, before, "LiveConnections"));
          assertTrue(after.get("LiveClients").longValue() >= 1, after.toString());
        }
        assertEquals(1, diff(after, before, "RequestShmSuccess"));
        assertEquals(3, diff(after, before, "RequestFdsSuccess"));
        assertEquals(2, diff(after, before, "RequestFdsError"));
        assertEquals(0, diff(after, before, "RequestFdsErrorAccessToken"));
        assertEquals(1, diff(after, before, "ReleaseFdsSuccess"));
        assertEquals(1 + 3 * 2, diff(after, before, "FdsPassed"));
        assertEquals(1, diff(after, before, "LiveSegments"));
        assertEquals(MAX_SLOTS, diff(after, before, "LiveSlots"));
        assertEquals(1, diff(after, before, "RejectionsClientSlots"));
        assertEquals(1, diff(after, before, "RejectionsTotal"));
        long p50 = after.get("RequestFdsLatencyP50Micros").longValue();
        long p99 = after.get("RequestFdsLatencyP99Micros").longValue();
        long max = after.get("RequestFdsLatencyMaxMicros").longValue();
        assertTrue(p50 > 0 && p50 <= p99 && p99 <= max, p50 + " " + p99 + " " + max);
        // Where the granted requests' time went: the files were opened, and the whole is at
        // least that part.
        long open = after.get("RequestFdsPhaseOpenP50Micros").longValue();
        long total = after.get("RequestFdsPhaseTotalP50Micros").longValue();
        assertTrue(open > 0 && open <= total, "open " + open + " total " + total);
        assertEquals(after.keySet(), new java.util.HashSet<>(ShimMetric.names()));
      }
    } finally {
      traces.stopCapturing();
      traceLogger.setLevel(level);
    }
    // The DataNode's own books, as a stock DataNode keeps them: every request that got as far as
    // opening files (not the one the slot limit refused), and one client-trace line per request.
    assertEquals(4, blocksGetLocalPathInfo(dn) - pathInfoBefore);
    String log = traces.getOutput();
    assertEquals(1, count(log, trace(dn, a.getBlock(), true)), log);
    assertEquals(1, count(log, trace(dn, unknown, false)), log);
    assertEquals(2, count(log, trace(dn, b.getBlock(), true)), log);
    assertEquals(1, count(log, trace(dn, b.getBlock(), false)), log);
    // Stock's lines for the segment request and the release too, byte for byte.
    assertEquals(
        1,
        count(
            log,
            String.format(
                DataNodeAccounting.SHM_TRACE_FORMAT,
                "metrics-test",
                shmIdSeen[0],
                shmIdSeen[1],
                dn.getDatanodeUuid())),
        log);
    assertEquals(
        1,
        count(
            log,
            String.format(
                DataNodeAccounting.RELEASE_TRACE_FORMAT,
                shmIdSeen[0],
                shmIdSeen[1],
                0,
                dn.getDatanodeUuid(),
                true)),
        log);

    // The segment's connection closed: the gauges come back.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (diff(collect(source), before, "LiveSegments") != 0) {
      assertTrue(System.nanoTime() < deadline, "segment not freed");
      Thread.sleep(5); // the event loop frees it on EOF; no latch exposed
    }
    assertEquals(0, diff(collect(source), before, "LiveSlots"));

    DFS.dfs().cluster().shutdownDataNodes();
    assertFalse(mbs.isRegistered(bean), "JMX bean " + bean + " after the DataNode shut down");
  }

  /** Flattens one record's metrics and tags into maps; fails on a name added twice. */
  static final class Flat extends MetricsRecordBuilder {
    private final Map<String, Number> values;
    private final Map<String, String> tags;
    private final MetricsCollector parent;

    Flat(Map<String, Number> values, Map<String, String> tags, MetricsCollector parent) {
      this.values = values;
      this.tags = tags;
      this.parent = parent;
    }

    private MetricsRecordBuilder put(MetricsInfo info, Number v) {
      assertTrue(values.put(info.name(), v) == null, "added twice: " + info.name());
      return this;
    }

    @Override
    public MetricsRecordBuilder tag(MetricsInfo info, String value) {
      tags.put(info.name(), value);
      return this;
    }

    @Override
    public MetricsRecordBuilder add(MetricsTag tag) {
      tags.put(tag.name(), tag.value());
      return this;
    }

    @Override
    public MetricsRecordBuilder add(AbstractMetric metric) {
      assertTrue(values.put(metric.name(), metric.value()) == null, "added twice: " + metric);
      return this;
    }

    @Override
    public MetricsRecordBuilder setContext(String value) {
      return this;
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, int value) {
      return put(info, value);
    }

    @Override
    public MetricsRecordBuilder addCounter(MetricsInfo info, long value) {
      return put(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, int value) {
      return put(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, long value) {
      return put(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, float value) {
      return put(info, value);
    }

    @Override
    public MetricsRecordBuilder addGauge(MetricsInfo info, double value) {
      return put(info, value);
    }

    @Override
    public MetricsCollector parent() {
      return parent;
    }
  }
}
