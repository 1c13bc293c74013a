package io.scr.core.internal.replica;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.Ticker;
import io.scr.core.internal.net.DomainConnection;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.SegmentWatcher;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.FailureClass;
import io.scr.shm.Segment;
import io.scr.shm.SegmentSource;
import io.scr.shm.ShmSupport;
import io.scr.shm.Slot;
import io.scr.shm.SlotPool;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.ShortCircuitRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Against a real stock DataNode (mode A): the DataNode drops a segment after it granted it and
 * before the slot pool adopted it. The endpoint watches the segment's connection from the moment it
 * is fetched, so the drop is reported while the segment is still in flight; before the fix the
 * report found no pool entry and was lost, the dead segment became allocatable, and the DataNode
 * refused every fd request that carried one of its slots.
 */
class SegmentDropRaceStockScrTest {
  static {
    io.scr.core.hdfs.JvmSingletonsAccess.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(1)
          .blockSize(1 << 20)
          .mode(DataNodeMode.STOCK_SCR)
          .buildExtension();

  /** Segments the DataNode has registered now (its own bookkeeping, not the client's). */
  private static int dataNodeSegments(MiniDfs dfs) {
    ShortCircuitRegistry registry = dfs.cluster().getDataNodes().get(0).getShortCircuitRegistry();
    AtomicInteger n = new AtomicInteger();
    registry.visit(
        (segments, slots) -> {
          n.set(segments.size());
          return true;
        });
    return n.get();
  }

  @Test
  void aSegmentDroppedBetweenFetchAndAdoptIsNeverAllocatedFrom() throws Exception {
    assertTrue(ShmSupport.isAvailable(), "shared memory: " + ShmSupport.unavailabilityCause());
    MiniDfs dfs = DFS.dfs();
    dfs.writeRandomFile("/drop-race", 4096, 4);
    LocatedBlock lb =
        dfs.fileSystem().getClient().getLocatedBlocks("/drop-race", 0).getLocatedBlocks().get(0);
    String path = dfs.socketPath(0);
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    for (FailureClass c : FailureClass.values()) {
      base.put(c, 1);
    }
    PathBackoff backoff = new PathBackoff(Ticker.systemTicker(), base, 10);
    AtomicReference<Segment> dropped = new AtomicReference<>();
    AtomicReference<SlotPool> poolRef = new AtomicReference<>();
    try (DomainSocketPool sockets = DomainSocketPool.newBuilder().build();
        SegmentWatcher watcher =
            new SegmentWatcher(
                r -> {
                  Thread t = new Thread(r, "scr-test-segment-watcher");
                  t.setDaemon(true);
                  return t;
                })) {
      AtomicInteger fetches = new AtomicInteger();
      DataNodeEndpoint endpoint =
          new DataNodeEndpoint(
              path,
              sockets,
              new PeerExtensions(sockets, true),
              new ClientCounters(),
              backoff,
              () -> watcher,
              "drop-race",
              true,
              true,
              ep -> {
                SlotPool p =
                    SlotPool.newBuilder(
                            "drop-race",
                            new SegmentSource() {
                              @Override
                              public Segment fetch() throws IOException {
                                Segment s = ep.fetch();
                                if (fetches.incrementAndGet() == 1) {
                                  dropByDataNode(dfs, ep.segmentConnection(s.id()));
                                  dropped.set(s);
                                }
                                return s;
                              }

                              @Override
                              public void returnSegment(Segment segment) {
                                ep.returnSegment(segment);
                              }
                            },
                            ep)
                        .lowWatermark(1)
                        .initialFetchBackoff(Duration.ofMillis(1))
                        .maxFetchBackoff(Duration.ofMillis(4))
                        .maxAllocationWait(Duration.ofSeconds(30))
                        .build();
                poolRef.set(p);
                return p;
              },
              Ticker.systemTicker(),
              new OrphanedReplicas(
                  "drop-race", false, Ticker.systemTicker(), new ClientCounters(), 0, Thread::new),
              (p, why) -> {},
              p -> true);
      try {
        Slot slot = endpoint.allocateSlot();

        assertNotNull(slot, "a slot from a live segment");
        assertNotNull(dropped.get(), "the first segment was dropped in flight");
        assertNotSame(dropped.get(), slot.segment(), "never a slot of the dropped segment");
        // The DataNode accepts it: an fd request carrying the slot succeeds (it refused every
        // request with a slot of the dropped segment).
        FileDescriptor[] fds = new FileDescriptor[2];
        ShortCircuitExchanges.requestFds(
            sockets, path, lb.getBlock(), lb.getBlockToken(), slot.id(), fds);
        for (FileDescriptor fd : fds) {
          new FileInputStream(fd).close();
        }
        poolRef.get().release(slot);
        SlotPoolStats stats = poolRef.get().stats();
        assertEquals(1, stats.segmentsDisconnected(), stats.toString());
      } finally {
        endpoint.close();
      }
    }
  }

  /**
   * Makes the DataNode drop the segment: one byte on its connection (which the client never writes
   * to) makes the DataNode's watcher drop the segment and close its end, which the endpoint's
   * watcher then reports. Returns once the DataNode has dropped it and the report had time to
   * arrive.
   */
  private static void dropByDataNode(MiniDfs dfs, DomainConnection connection) throws IOException {
    assertNotNull(connection, "the segment's connection");
    connection.sendByte(0);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (dataNodeSegments(dfs) > 0) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the DataNode never dropped the segment");
      }
      sleep(10); // the DataNode's DomainSocketWatcher has nothing to latch on
    }
    // The watcher thread reports the EOF within microseconds; give a loaded machine room. A late
    // report would only make the test pass without exercising the race, never fail it.
    sleep(200);
  }

  private static void sleep(long millis) throws IOException {
    try {
      TimeUnit.MILLISECONDS.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }
}
