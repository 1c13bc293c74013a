package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.channel.EventLoop;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.net.unix.DomainSocket;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker that opened a replica sends the op-87 reply and its fds itself, so the client is
 * answered without waiting for the connection's event loop to take the reply back (the second
 * hand-off of every request), and the shim times each phase of the request ({@code
 * phase.request_fds.*} in its counters).
 */
class ShimReplyFromWorkerTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-16", 1073741900L, 4, 1001);
  private static final int MAX = Integer.MAX_VALUE;

  @TempDir Path dir;

  /** Each test's shim books (JUnit makes a new instance per test). */
  private final ShimMetrics metrics = new ShimMetrics();

  private final ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);

  /** The threads that opened each request's files, in order (tests whose dataset records them). */
  private final List<String> openedOn = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** A dataset holding {@link #BLOCK} with these 4 data bytes and a NULL-checksum meta file. */
  private FsDatasetSpi<?> replica(int... data) throws IOException {
    byte[] bytes = new byte[data.length];
    for (int i = 0; i < data.length; i++) {
      bytes[i] = (byte) data[i];
    }
    return FakeDataset.of(
        BLOCK,
        Files.write(dir.resolve("blk"), bytes),
        Files.write(dir.resolve("blk.meta"), new byte[] {0, 1, 2, 0, 0, 2, 0}));
  }

  @Test
  void theClientHasItsFdsWhileTheEventLoopIsHeldUpAndEveryPhaseIsTimed() throws Exception {
    FsDatasetSpi<?> dataset = replica(1, 2, 3, 4);
    CountDownLatch loopHeld = new CountDownLatch(1);
    CountDownLatch releaseLoop = new CountDownLatch(1);
    ShimServer[] server = new ShimServer[1];
    // The worker opening the replica first holds the (only) event loop up, which has decoded the
    // request by then; the reply can reach the client only if the worker sends it.
    ShortCircuitService service =
        TestServices.withoutTokens(
            () -> {
              EventLoop loop = server[0].eventLoops().next();
              loop.execute(
                  () -> {
                    loopHeld.countDown();
                    try {
                      releaseLoop.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  });
              try {
                assertTrue(loopHeld.await(60, TimeUnit.SECONDS), "the event loop is held up");
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
              return dataset;
            },
            registry,
            limits,
            metrics);
    Configuration conf = new Configuration(false);
    conf.setInt(ScrShimKeys.IO_THREADS.name(), 1);
    conf.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), false); // the workers' path
    Path socket = dir.resolve("dn.sock");
    server[0] =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
    server[0].start();
    try (RawPeer peer = new RawPeer(socket.toString())) {
      // Bounded well under the event loop's hold (60 s): without the worker's reply this read
      // times out while the loop is still held.
      peer.socket.setAttribute(DomainSocket.RECEIVE_TIMEOUT, 15_000);
      peer.sender.requestShortCircuitFds(BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      assertEquals(Status.SUCCESS, peer.readBlockOpResponse().getStatus());
      FileInputStream[] fds = new FileInputStream[2];
      peer.receiveFds(fds);
      try {
        assertEquals(1, releaseLoop.getCount(), "answered while the event loop is held up");
        assertEquals(1, fds[0].read(), "the block file");
      } finally {
        releaseLoop.countDown();
        RawPeer.closeAll(fds);
      }
      // The connection goes on: the next request is served through the event loop as usual.
      peer.sender.requestShortCircuitFds(BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      assertEquals(Status.SUCCESS, peer.readBlockOpResponse().getStatus());
      peer.receiveFds(fds);
      RawPeer.closeAll(fds);
      // Counted by the event loop once it has taken the reply back (after the client has it).
      awaitGrantedRequests(2);
    } finally {
      releaseLoop.countDown();
      server[0].close();
    }
    Map<String, Long> counters = metrics.snapshot();
    for (ShimMetrics.FdPhase phase : ShimMetrics.FdPhase.values()) {
      assertEquals(
          2L,
          counters.get("phase.request_fds." + phase.label + ".count"),
          phase + " timed once per granted request: " + counters);
    }
    assertEquals(4L, counters.get("fds_passed"));
    assertEquals(2L, metrics.requests(ShimMetrics.OpKind.REQUEST_FDS, Status.SUCCESS));
    assertTrue(
        counters.get("phase.request_fds.queue.max_us")
            <= counters.get("phase.request_fds.total.max_us"),
        counters.toString());
  }

  /**
   * The op latency the shim publishes ({@code RequestFdsLatency*}, "request decoded to reply sent")
   * includes a wait for a worker: with one worker busy for 300 ms, a second connection's request
   * waits behind it, and both requests took at least that long as their clients saw it.
   */
  @Test
  void aRequestsLatencyIncludesItsWaitForAWorker() throws Exception {
    FsDatasetSpi<?> dataset = replica(1, 2, 3, 4);
    java.util.concurrent.atomic.AtomicInteger calls =
        new java.util.concurrent.atomic.AtomicInteger();
    CountDownLatch firstOnWorker = new CountDownLatch(1);
    ShortCircuitService service =
        TestServices.withoutTokens(
            () -> {
              if (calls.getAndIncrement() == 0) {
                firstOnWorker.countDown();
                sleepQuietly(300);
              }
              return dataset;
            },
            registry,
            limits,
            metrics);
    Path socket = dir.resolve("dn-queue.sock");
    ShimServer server = startWithOneWorker(service, socket);
    try (RawPeer first = new RawPeer(socket.toString());
        RawPeer second = new RawPeer(socket.toString())) {
      first.sender.requestShortCircuitFds(BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      assertTrue(firstOnWorker.await(20, TimeUnit.SECONDS));
      second.sender.requestShortCircuitFds(
          BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      for (RawPeer peer : new RawPeer[] {first, second}) {
        assertEquals(Status.SUCCESS, peer.readBlockOpResponse().getStatus());
        FileInputStream[] fds = new FileInputStream[2];
        peer.receiveFds(fds);
        RawPeer.closeAll(fds);
      }
      awaitGrantedRequests(2);
    } finally {
      server.close();
    }
    Map<String, Long> counters = metrics.snapshot();
    // The smaller of the two is the second request's: it waited for the busy worker.
    assertTrue(
        counters.get("latency.request_fds.p50_us") >= 250_000,
        "the queued request's latency includes its wait: " + counters);
  }

  /**
   * A segment request (op 89) touches memory only (a memfd) and is served on the event loop that
   * decoded it, so it is answered while the only worker is held by an fd request. Through the
   * workers it waited behind it (0.5-1.2 ms at the median in ReplicaOpenBenchmark, where every new
   * client's first reads wait for their first segment).
   */
  @Test
  void aSegmentRequestIsAnsweredWhileEveryWorkerIsBusy() throws Exception {
    assumeTrue(
        io.scr.shm.SegmentFactory.newBuilder().build().usesMemfd(),
        "segments are memfds here (the fallback directory's segments stay on the workers)");
    FsDatasetSpi<?> dataset = replica(1, 2, 3, 4);
    CountDownLatch onWorker = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    ShortCircuitService service =
        TestServices.withoutTokens(
            TestServices.holding(onWorker, letGo, () -> {}, dataset), registry, limits, metrics);
    Path socket = dir.resolve("dn-memory-only.sock");
    ShimServer server = startWithOneWorker(service, socket);
    // If the segment request waited for the worker, this lets the worker go after 5 s.
    Thread watchdog =
        new Thread(
            () -> {
              sleepQuietly(5_000);
              letGo.countDown();
            });
    watchdog.setDaemon(true);
    try (RawPeer busy = new RawPeer(socket.toString());
        RawPeer shm = new RawPeer(socket.toString())) {
      busy.sender.requestShortCircuitFds(BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
      assertTrue(onWorker.await(20, TimeUnit.SECONDS), "the fd request holds the worker");
      watchdog.start();
      shm.sender.requestShortCircuitShm("memory-only");
      assertEquals(Status.SUCCESS, shm.readShmResponse().getStatus());
      FileInputStream[] fd = new FileInputStream[1];
      assertEquals(0, shm.receiveFds(fd));
      RawPeer.closeAll(fd);
      assertEquals(
          1, letGo.getCount(), "the segment request was answered only once the worker was free");
      letGo.countDown();
      assertEquals(Status.SUCCESS, busy.readBlockOpResponse().getStatus());
      FileInputStream[] fds = new FileInputStream[2];
      busy.receiveFds(fds);
      RawPeer.closeAll(fds);
    } finally {
      letGo.countDown();
      server.close();
    }
  }

  @Test
  void withTheKeyAnFdRequestIsServedOnTheEventLoopThatDecodedIt() throws Exception {
    FsDatasetSpi<?> dataset = replica(5, 6, 7, 8);
    ShortCircuitService service =
        TestServices.withoutTokens(
            () -> {
              openedOn.add(Thread.currentThread().getName());
              return dataset;
            },
            registry,
            limits,
            metrics);
    for (boolean onLoop : new boolean[] {false, true}) {
      openedOn.clear();
      Configuration conf = new Configuration(false);
      conf.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), onLoop);
      Path socket = dir.resolve("dn-" + onLoop + ".sock");
      ShimServer server =
          new ShimServer(
              socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
      server.start();
      try (RawPeer peer = new RawPeer(socket.toString())) {
        for (int i = 0; i < 3; i++) {
          peer.sender.requestShortCircuitFds(
              BLOCK, new Token<BlockTokenIdentifier>(), null, 1, i % 2 == 0);
          assertEquals(Status.SUCCESS, peer.readBlockOpResponse().getStatus());
          FileInputStream[] fds = new FileInputStream[2];
          int dataByte = peer.receiveFds(fds);
          try {
            assertEquals(5, fds[0].read(), "the block file");
          } finally {
            RawPeer.closeAll(fds);
          }
          if (dataByte != 0) {
            peer.writeRaw(new byte[] {0}); // the receipt its request asked for
          }
        }
      } finally {
        server.close();
      }
      assertEquals(3, openedOn.size(), openedOn.toString());
      for (String thread : openedOn) {
        assertTrue(
            thread.startsWith(onLoop ? "scr-shim-io" : "scr-shim-worker"),
            "key " + onLoop + ": files opened on " + thread);
      }
    }
  }

  @Test
  void anFdRequestSlowOnTheDiskOnTheEventLoopSendsTheNextOnesToTheWorkersForTheBackoff()
      throws Exception {
    long fromStorage = slowSecondRequest(true);
    assumeTrue(fromStorage > 0, "the test directory's file system reads no device: " + dir);
    // 1: on the loop; 2: on the loop, 300 ms (over 100) with a read from storage; 3: on a worker;
    // 4: back on the loop.
    assertEquals(4, openedOn.size(), openedOn.toString());
    assertTrue(openedOn.get(0).startsWith("scr-shim-io"), openedOn.toString());
    assertTrue(openedOn.get(1).startsWith("scr-shim-io"), openedOn.toString());
    assertTrue(openedOn.get(2).startsWith("scr-shim-worker"), openedOn.toString());
    assertTrue(openedOn.get(3).startsWith("scr-shim-io"), openedOn.toString());
    assertEquals(1L, metrics.snapshot().get("fd_requests_moved_to_workers"));
    assertEquals(0L, metrics.snapshot().get("fd_requests_slow_kept_on_loop"));
  }

  @Test
  void anFdRequestThatWaitedWithoutReadingStorageLeavesTheNextOnesOnTheEventLoop()
      throws Exception {
    slowSecondRequest(false);
    // A lock held elsewhere (here: a sleep) holds up a worker as much as the loop: no move.
    assertEquals(4, openedOn.size(), openedOn.toString());
    for (String thread : openedOn) {
      assertTrue(thread.startsWith("scr-shim-io"), openedOn.toString());
    }
    assertEquals(0L, metrics.snapshot().get("fd_requests_moved_to_workers"));
    assertEquals(1L, metrics.snapshot().get("fd_requests_slow_kept_on_loop"));
  }

  /**
   * Four fd requests on the event loop (slow above 100 ms, backoff 1.5 s) on a fake clock; the
   * second takes 300 ms on it (and waits for real briefly), after reading a file from storage if
   * {@code readStorage}, and the fourth comes 2 s later on the clock, after the backoff. Records
   * each request's file-opening thread in {@code openedOn}; returns the bytes the second read from
   * storage.
   */
  private long slowSecondRequest(boolean readStorage) throws Exception {
    FsDatasetSpi<?> dataset = replica(9, 8, 7, 6);
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicInteger calls =
        new java.util.concurrent.atomic.AtomicInteger();
    ColdFile cold = new ColdFile(dir.resolve("cold"), 1 << 20);
    java.util.concurrent.atomic.AtomicLong fromStorage =
        new java.util.concurrent.atomic.AtomicLong();
    ShortCircuitService service =
        TestServices.withoutTokens(
            () -> {
              openedOn.add(Thread.currentThread().getName());
              if (calls.getAndIncrement() == 1) {
                if (readStorage) { // a directory not in the kernel's caches on a slow disk
                  fromStorage.set(cold.readCold());
                }
                // 300 ms on the shim's clock; a real wait of 1 ms is what the stall probe sees of
                // a lock wait (a voluntary context switch).
                clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(300));
                sleepQuietly(1);
              }
              return dataset;
            },
            registry,
            limits,
            metrics);
    Configuration conf = new Configuration(false); // on the event loop: the default
    conf.setLong(ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS.name(), 100);
    conf.setLong(ScrShimKeys.FD_REQUESTS_LOOP_BACKOFF_MS.name(), 1500);
    Path socket = dir.resolve("dn-slow.sock");
    ShimServer server =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, clock::get);
    server.start();
    try (RawPeer peer = new RawPeer(socket.toString())) {
      for (int i = 0; i < 4; i++) {
        if (i == 3) {
          clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(2000)); // past the backoff
        }
        peer.sender.requestShortCircuitFds(
            BLOCK, new Token<BlockTokenIdentifier>(), null, 1, false);
        assertEquals(Status.SUCCESS, peer.readBlockOpResponse().getStatus());
        FileInputStream[] fds = new FileInputStream[2];
        peer.receiveFds(fds);
        RawPeer.closeAll(fds);
      }
    } finally {
      server.close();
    }
    return fromStorage.get();
  }

  /** Sleeps in a dataset supplier (which cannot throw InterruptedException). */
  /** A started shim on {@code socket} with one worker and fd requests on the workers. */
  private ShimServer startWithOneWorker(ShortCircuitService service, Path socket) throws Exception {
    Configuration conf = new Configuration(false);
    conf.setBoolean(ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP.name(), false);
    conf.setInt(ScrShimKeys.WORKER_THREADS.name(), 1);
    ShimServer server =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
    server.start();
    return server;
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Waits until the shim counted {@code n} granted fd requests: the event loop books each once it
   * has taken the reply back, after the client has it.
   */
  private void awaitGrantedRequests(long n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (metrics.requests(ShimMetrics.OpKind.REQUEST_FDS, Status.SUCCESS) < n) {
      assertTrue(System.nanoTime() - deadline < 0, n + " requests counted");
      Thread.sleep(10);
    }
  }
}
