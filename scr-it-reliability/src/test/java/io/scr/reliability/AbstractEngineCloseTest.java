package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.internal.engine.Engine;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.ResourceSnapshot;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine-close event, run once per deployment mode by a subclass and for both integration
 * points: a file system read short-circuit by several threads, then closed while those threads live
 * on (as an application's thread pool does). Everything the scr engine took must be back: its
 * threads, its fds into the cluster (block, meta, sockets, segments), its mappings of meta files
 * and segments, and its direct memory, including what each reading thread's thread-locals held (a
 * spare lease, the reader's scratch buffers: about 80 KiB per thread).
 */
abstract class AbstractEngineCloseTest {
  static final int BLOCK = 128 * 1024;
  static final int READERS = 8;
  static final Duration PATIENCE = Duration.ofSeconds(20);

  /** Largest pread: HBase-sized, and small enough that a JDK per-thread buffer stays small. */
  static final int MAX_READ = 8 * 1024;

  /**
   * Direct memory allowed above the baseline after close: less than three readers' scratch (3 x 80
   * KiB), so keeping every reader's (8 x 80 KiB) fails, while what the JDK keeps per thread does
   * not: a read into a heap {@code ByteBuffer} (the accessor path, through the stock stream) goes
   * through a temporary direct buffer the JDK caches per thread (sun.nio.ch.Util), at most {@link
   * #MAX_READ} here, 8 x 8 KiB in all (measured on the accessor path: 48 KB, and 96 KB with 16 KiB
   * reads; 2 KB on the file system path, whose byte[] reads go through the reader's scratch).
   */
  static final long DIRECT_TOLERANCE_BYTES = 192 * 1024;

  static {
    Faults.warmJvmSingletons();
  }

  /** The one-DataNode cluster of the subclass's mode. */
  abstract MiniDfs dfs();

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  /** The two ways a client turns scr on, each with an engine of its own (client context). */
  enum Point {
    SCR_FILESYSTEM,
    REPLICA_ACCESSOR;

    private static final AtomicInteger CONTEXTS = new AtomicInteger();

    FileSystem open(MiniDfs dfs) {
      if (this == SCR_FILESYSTEM) {
        return Faults.scrFileSystem(dfs, c -> {});
      }
      return dfs.newFileSystem(
          (Configuration c) -> {
            c.set(
                "dfs.client.replica.accessor.builder.classes",
                ScrReplicaAccessorBuilder.class.getName());
            c.setBoolean("dfs.client.read.shortcircuit", false);
            c.set("scr.client.context", "engine-close-accessor-" + CONTEXTS.incrementAndGet());
            if (dfs.mode() == DataNodeMode.SHIM) {
              c.set("scr.client.socket.paths", c.get(MiniDfs.SHIM_SOCKET_PATH_KEY));
            }
          });
    }

    /** Closes {@code fs} and, for the accessor, the engine the builder holds for it. */
    void close(FileSystem fs) throws IOException {
      fs.close();
      if (this == REPLICA_ACCESSOR) {
        ScrReplicaAccessorBuilder.releaseAll();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Point.class)
  void closingTheFileSystemGivesBackEverythingTheEngineTook(Point point) throws Exception {
    MiniDfs dfs = dfs();
    String file = "/engine-close/" + point;
    int length = 4 * BLOCK + 777;
    byte[] data = dfs.writeRandomFile(file, length, 14);
    // One whole cycle first, on this thread: what the cluster and the JVM allocate once (the
    // DataNode's buffers, class loading) is in the baseline, not counted against the engine.
    cycle(point, dfs, file, data, 1, null);
    System.gc();
    ResourceSnapshot before = ResourceSnapshot.take();
    Set<String> mappingsBefore = ResourceSnapshot.clusterMappings(dfs.ownedPaths());
    long directBefore = settledDirectMemory();

    CountDownLatch done = new CountDownLatch(1);
    List<Thread> readers = new ArrayList<>();
    try {
      cycle(point, dfs, file, data, READERS, done, readers);

      List<String> leaks = leaks(before, mappingsBefore, directBefore, dfs);
      assertTrue(
          leaks.isEmpty(),
          point
              + ": with the "
              + READERS
              + " reading threads still alive, closing left behind: "
              + leaks);
    } finally {
      done.countDown();
      for (Thread t : readers) {
        t.join(30_000);
      }
    }
  }

  private void cycle(
      Point point, MiniDfs dfs, String file, byte[] data, int threads, CountDownLatch keepAlive)
      throws Exception {
    List<Thread> readers = new ArrayList<>();
    cycle(point, dfs, file, data, threads, keepAlive, readers);
    for (Thread t : readers) {
      t.join(30_000);
    }
  }

  /**
   * Opens a file system, reads {@code file} short-circuit from {@code threads} threads (which then
   * stay alive until {@code keepAlive} opens, or end at once when it is null), checks the bytes and
   * that they short-circuited, and closes the file system.
   */
  private void cycle(
      Point point,
      MiniDfs dfs,
      String file,
      byte[] data,
      int threads,
      CountDownLatch keepAlive,
      List<Thread> readers)
      throws Exception {
    FileSystem fs = point.open(dfs);
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    CountDownLatch read = new CountDownLatch(threads);
    try (FSDataInputStream in = fs.open(new Path(file))) {
      for (int i = 0; i < threads; i++) {
        long seed = i;
        Thread t =
            new Thread(
                () -> {
                  try {
                    preads(in, data, seed);
                  } catch (Throwable e) {
                    errors.add(e);
                  } finally {
                    read.countDown();
                  }
                  if (keepAlive != null) {
                    awaitUninterruptibly(keepAlive);
                  }
                },
                "engine-close-reader-" + i);
        t.setDaemon(true);
        readers.add(t);
        t.start();
      }
      assertTrue(read.await(60, TimeUnit.SECONDS), point + ": the readers did not finish");
      assertTrue(errors.isEmpty(), point + ": reads failed: " + errors);
      long shortCircuit =
          ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
      assertTrue(
          shortCircuit > 0,
          point + ": the reads must short-circuit (fallbacks: " + fallbacks(point, fs) + ")");
    } finally {
      point.close(fs);
    }
  }

  private static String fallbacks(Point point, FileSystem fs) {
    try {
      Engine scr = Engine.running(fs.getConf()); // either point's engine, by its context
      return String.valueOf(scr.metricsSnapshot().fallbacks());
    } catch (RuntimeException e) {
      return e.toString();
    }
  }

  /**
   * Unaligned preads that fit the reader's scratch (so every thread fills its scratch and, on the
   * file system path, keeps a spare lease), each checked against the written bytes.
   */
  private static void preads(FSDataInputStream in, byte[] data, long seed) throws IOException {
    Random r = new Random(seed);
    byte[] buf = new byte[MAX_READ];
    for (int i = 0; i < 200; i++) {
      int len = 1 + r.nextInt(buf.length);
      int pos = r.nextInt(data.length - len);
      in.readFully(pos, buf, 0, len);
      if (!Arrays.equals(buf, 0, len, data, pos, pos + len)) {
        throw new AssertionError("wrong bytes at " + pos + " (+" + len + ")");
      }
    }
  }

  /** What is still held, polled (with collections) for {@link #PATIENCE}; empty when nothing. */
  private static List<String> leaks(
      ResourceSnapshot before, Set<String> mappingsBefore, long directBefore, MiniDfs dfs)
      throws InterruptedException {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    while (true) {
      System.gc(); // mappings and direct buffers go with their last reference (cleaners)
      List<String> leaks = new ArrayList<>(Faults.scrLeaks(before, dfs, Duration.ZERO));
      Set<String> mappings = new TreeSet<>(ResourceSnapshot.clusterMappings(dfs.ownedPaths()));
      mappings.removeAll(mappingsBefore);
      for (String m : mappings) {
        leaks.add("mapping " + m);
      }
      long direct = ResourceSnapshot.directMemoryUsed();
      if (direct > directBefore + DIRECT_TOLERANCE_BYTES) {
        leaks.add(
            "direct memory "
                + direct
                + " bytes, "
                + (direct - directBefore)
                + " above the baseline (tolerance "
                + DIRECT_TOLERANCE_BYTES
                + ")");
      }
      if (leaks.isEmpty() || System.nanoTime() - deadline > 0) {
        System.out.println(
            "engine close: direct memory "
                + (direct - directBefore)
                + " bytes over the baseline of "
                + directBefore
                + ", "
                + leaks.size()
                + " leaks");
        return leaks;
      }
      TimeUnit.MILLISECONDS.sleep(100); // cleaners and socket teardown have nothing to latch on
    }
  }

  /** Direct memory once collections stop freeing any (the baseline). */
  private static long settledDirectMemory() throws InterruptedException {
    long previous = Long.MAX_VALUE;
    for (int i = 0; i < 20; i++) {
      System.gc();
      TimeUnit.MILLISECONDS.sleep(50);
      long now = ResourceSnapshot.directMemoryUsed();
      if (now >= previous) {
        return now;
      }
      previous = now;
    }
    return previous;
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
