package io.scr.reliability;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.shim.ScrShimPlugin;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.ResourceSnapshot;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.newsclub.net.unix.AFUNIXSocket;

/** Shared pieces of the fault tests: scr clients per mode, reads, waits and leak checks. */
final class Faults {
  private static final AtomicInteger CONTEXTS = new AtomicInteger();

  private Faults() {}

  /**
   * Creates the process-wide singletons scr's native stack keeps for the JVM's life (jnr-ffi,
   * scr-shm cleaners, junixsocket) before a leak baseline is taken.
   */
  static void warmJvmSingletons() {
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(8192);
        Segment s = Segment.map(ShmId.random(), fd.fd(), 8192)) {
      s.slotCount();
      AFUNIXSocket.newInstance().close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A new {@link ScrFileSystem} with its own engine (context): mode A finds the stock DataNode's
   * {@code dfs.domain.socket.path}, mode B the shim's socket. Stock short-circuit is off, so every
   * short-circuit byte is scr's and every fallback goes over TCP.
   */
  static ScrFileSystem scrFileSystem(MiniDfs dfs, Consumer<Configuration> extra) {
    return dfs.newFileSystem(
        c -> {
          scrSettings(dfs, c);
          extra.accept(c);
        });
  }

  /** The settings of {@link #scrFileSystem} (also for a child JVM's configuration file). */
  static void scrSettings(MiniDfs dfs, Configuration c) {
    c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
    c.set("scr.client.context", "reliability-" + CONTEXTS.incrementAndGet());
    c.setBoolean("dfs.client.read.shortcircuit", false);
    // stock retries after a failed block read wait up to 3 s by default
    c.setInt("dfs.client.retry.window.base", 10);
    if (dfs.mode() == DataNodeMode.SHIM) {
      c.set("scr.client.socket.paths", c.get(MiniDfs.SHIM_SOCKET_PATH_KEY));
    }
  }

  static byte[] readFully(ScrFileSystem fs, String path, int length) throws IOException {
    byte[] out = new byte[length];
    try (FSDataInputStream in = fs.open(new Path(path))) {
      in.readFully(0, out);
    }
    return out;
  }

  /** Waits for a condition another thread or process makes true; bounded, polled. */
  static void await(String what, Duration limit, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out after " + limit + " waiting for " + what);
      }
      // DataNode deletions, invalidation scans and idle expiry have no latch to wait on
      TimeUnit.MILLISECONDS.sleep(20);
    }
  }

  /**
   * Waits until every DataNode socket of {@code dfs} is usable for new replica opens: healthy and
   * no longer on trial (a DataNode restarted, or killed and back, is healthy on a probe's word
   * first, and readers send it nothing until a request sent from the probe thread is answered in
   * time). Each poll asks for {@code block}'s replica at every socket, which keeps the probes going
   * and, when no request was remembered for the trial, offers its own; any answer (a refusal of a
   * block the DataNode does not hold too) ends the trial. Tests that follow a restart call this
   * instead of assuming the path usable.
   */
  static void awaitDataNodesUsable(
      MiniDfs dfs, io.scr.core.internal.engine.Engine engine, LocatedBlock block)
      throws InterruptedException {
    io.scr.core.internal.health.DataNodeHealth health = engine.dataNodeHealth();
    List<String> paths = new ArrayList<>();
    for (int i = 0; i < dfs.dataNodes(); i++) {
      paths.add(dfs.socketPath(i));
    }
    await(
        "every DataNode socket healthy and off trial: " + paths,
        Duration.ofSeconds(60),
        () -> {
          boolean usable = true;
          for (String p : paths) {
            if (health.state(p) != io.scr.core.stats.HealthState.HEALTHY || health.onTrial(p)) {
              usable = false;
              try (io.scr.core.ReplicaLease l =
                  engine.lease(block.getBlock(), block.getBlockToken(), p, null, null)) {
                // asked: keeps the probe going, or offers the trial
              } catch (IOException e) {
                // the next poll asks again
              }
            }
          }
          return usable;
        });
  }

  /**
   * What a test left behind that scr owns: scr threads, and fds into the cluster's files (block,
   * meta, socket) or memfd segments. DataNode threads (xceivers, restarts) come and go on their own
   * and are the fixture's class-level check.
   */
  static List<String> scrLeaks(ResourceSnapshot before, MiniDfs dfs, Duration patience) {
    // Polls with the filter applied: the snapshot's own patience would wait for DataNode threads
    // that are not ours to end (an xceiver of a stale connection), the whole patience each time.
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      List<String> leaks =
          before.leakedSince(Duration.ZERO, dfs.ownedPaths()).stream()
              .filter(l -> !l.startsWith("thread '") || l.startsWith("thread 'scr-"))
              .filter(l -> !l.startsWith("thread 'scr-shim-")) // the DataNode's plugin
              .filter(l -> !l.endsWith("in_use.lock")) // a restarted DataNode's storage locks
              .collect(Collectors.toList());
      if (leaks.isEmpty()) {
        return leaks;
      }
      if (System.nanoTime() - deadline > 0) {
        return withoutGarbage(leaks, before, dfs);
      }
      try {
        TimeUnit.MILLISECONDS.sleep(50); // threads and sockets wind down asynchronously
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return leaks;
      }
    }
  }

  /**
   * Drops the fds a garbage collection closes, and prints them. The DataNodes share this JVM, and a
   * stock DataNode abandons the block file stream it opened for a short-circuit request when the
   * meta file has gone by the time it opens that one (a replica deleted or moved by an append in
   * between: {@code DataNode.requestShortCircuitFdsForRead} catches only {@code
   * ClassCastException}); only the JDK's cleaner of that unreachable {@code FileInputStream} closes
   * it. scr never opens a block file by path: its replica fds are passed fds, wrapped in streams
   * without a cleaner, so a replica scr fails to close stays open through any number of collections
   * and is still reported. The engine's own fd account is checked separately.
   */
  private static List<String> withoutGarbage(
      List<String> leaks, ResourceSnapshot before, MiniDfs dfs) {
    System.gc();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
    List<String> after = leaks;
    while (System.nanoTime() - deadline < 0) {
      try {
        TimeUnit.MILLISECONDS.sleep(100); // the cleaner thread closes them after the collection
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      after =
          before.leakedSince(Duration.ZERO, dfs.ownedPaths()).stream()
              .filter(leaks::contains)
              .collect(Collectors.toList());
      if (after.isEmpty()) {
        break;
      }
    }
    List<String> collected = new ArrayList<>(leaks);
    collected.removeAll(after);
    if (!collected.isEmpty()) {
      System.out.println(
          "closed by the garbage collector, not by their owner (a DataNode in this JVM): "
              + collected);
    }
    return after;
  }

  /** Open fds of this process whose target contains {@code fragment}. */
  static List<String> openFdsMatching(String fragment) {
    return ResourceSnapshot.openFds().values().stream()
        .filter(t -> t.contains(fragment))
        .collect(Collectors.toList());
  }

  /** The shim plugin of DataNode {@code index} (mode B). */
  static ScrShimPlugin shim(MiniDfs dfs, int index) {
    DataNode dn = dfs.cluster().getDataNodes().get(index);
    try {
      Field f = DataNode.class.getDeclaredField("plugins");
      f.setAccessible(true);
      @SuppressWarnings("unchecked")
      List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
      for (ServicePlugin p : plugins) {
        if (p instanceof ScrShimPlugin shim) {
          return shim;
        }
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
    throw new AssertionError("DataNode " + index + " runs no ScrShimPlugin");
  }

  static long counter(Map<String, Long> counters, String name) {
    Long v = counters.get(name);
    return v == null ? 0 : v;
  }
}
