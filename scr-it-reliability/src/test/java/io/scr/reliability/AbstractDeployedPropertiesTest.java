package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.junit.jupiter.api.Test;

/**
 * Properties of scr against a real DataNode (in-process MiniDFSCluster, stock or shim) that no unit
 * test can show: the fds a DataNode passes are read-only in the kernel, the client reuses its
 * pooled connections across replica opens, and a cached read allocates (almost) nothing.
 */
abstract class AbstractDeployedPropertiesTest {
  static final int BLOCK = 64 * 1024;
  static final int BLOCKS = 16;

  abstract MiniDfs dfs();

  static MiniDfs.Builder cluster() {
    return MiniDfs.builder().dataNodes(1).blockSize(BLOCK);
  }

  private ScrFileSystem scrFs() {
    return Faults.scrFileSystem(dfs(), c -> c.setInt("scr.cache.capacity", 4 * BLOCKS));
  }

  /**
   * Every fd of this process on a finalized replica file while scr holds replicas open is open
   * O_RDONLY ({@code /proc/self/fdinfo} flags): a reader can never write a block, whatever Java
   * wrapper holds the fd.
   */
  @Test
  void passedFdsAreReadOnlyInTheKernel() throws Exception {
    byte[] data = dfs().writeRandomFile("/props/ro", 4 * BLOCK, 11);
    try (ScrFileSystem fs = scrFs();
        FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/props/ro"))) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(4, fs.scrClient().metricsSnapshot().paths().get(0).opens(), "replicas open");
      List<String> checked = new ArrayList<>();
      try (Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
        for (Path fd : (Iterable<Path>) fds::iterator) {
          String target;
          try {
            target = Files.readSymbolicLink(fd).toString();
          } catch (IOException e) {
            continue; // closed meanwhile
          }
          if (!target.contains("/finalized/") || !target.contains("blk_")) {
            continue;
          }
          long flags = fdFlags(fd.getFileName().toString());
          assertEquals(
              0, flags & 3, "fd " + fd.getFileName() + " on " + target + " is not O_RDONLY");
          checked.add(target);
        }
      }
      assertTrue(checked.size() >= 4, "scr's replica fds were found: " + checked);
    }
  }

  private static long fdFlags(String fd) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/fdinfo", fd))) {
      if (line.startsWith("flags:")) {
        return Long.parseLong(line.substring("flags:".length()).trim(), 8);
      }
    }
    throw new AssertionError("/proc/self/fdinfo/" + fd + " has no flags line");
  }

  /**
   * Opening many replicas one after another costs one fd request each over the same pooled
   * connection, not a connect each (stock dials its socket anew unless its peer cache holds one).
   */
  @Test
  void pooledConnectionsAreReusedAcrossReplicaOpens() throws Exception {
    dfs().writeRandomFile("/props/pool", BLOCKS * BLOCK, 12);
    try (ScrFileSystem fs = scrFs();
        FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/props/pool"))) {
      Engine scr = Engine.running(fs.getConf());
      long connectsBefore = scr.metricsSnapshot().socketConnects();
      byte[] one = new byte[1];
      for (int b = 0; b < BLOCKS; b++) {
        in.readFully((long) b * BLOCK + 7, one);
      }
      ClientSnapshot s = scr.metricsSnapshot();
      assertEquals(BLOCKS, s.paths().get(0).opens(), "one replica open per block");
      long connects = s.socketConnects() - connectsBefore;
      // One for the shared-memory segment (its connection stays with the segment) and pooled
      // connections that every fd request reuses: one, or two while prefetch on open runs beside
      // the reads. A connect per open would be 16.
      assertTrue(connects <= 3, connects + " connects for " + BLOCKS + " replica opens: " + s);
      assertEquals(0, s.fallbackTotal(), s.fallbacks().toString());
    }
  }

  /**
   * A positional read of a cached replica allocates (almost) nothing on the heap: measured with the
   * thread's own allocation counter over many reads after warm-up. The bound is generous (a JIT or
   * statistics hiccup must not fail it) but below one small object per read, so a per-read lease,
   * buffer or exception object shows as a failure.
   */
  @Test
  void aCachedPreadAllocatesLessThanOneSmallObjectPerRead() throws Exception {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    assertTrue(threads.isThreadAllocatedMemorySupported(), "this JVM cannot count allocations");
    threads.setThreadAllocatedMemoryEnabled(true);
    byte[] data = dfs().writeRandomFile("/props/alloc", 2 * BLOCK, 13);
    try (ScrFileSystem fs = scrFs();
        FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/props/alloc"))) {
      byte[] buf = new byte[4096];
      ByteBuffer direct = ByteBuffer.allocateDirect(4096);
      Random r = new Random(14);
      int[] positions = new int[1024];
      for (int i = 0; i < positions.length; i++) {
        positions[i] = r.nextInt(data.length - buf.length);
      }
      for (int i = 0; i < 50_000; i++) { // warm-up: the JIT compiles the read path
        in.readFully(positions[i & 1023], buf);
        direct.clear();
        in.read(positions[i & 1023], direct);
      }
      int reads = 20_000;
      long tid = Thread.currentThread().getId();
      long before = threads.getThreadAllocatedBytes(tid);
      for (int i = 0; i < reads; i++) {
        in.readFully(positions[i & 1023], buf);
      }
      long arrayBytes = threads.getThreadAllocatedBytes(tid) - before;
      before = threads.getThreadAllocatedBytes(tid);
      for (int i = 0; i < reads; i++) {
        direct.clear();
        in.read(positions[i & 1023], direct);
      }
      long bufferBytes = threads.getThreadAllocatedBytes(tid) - before;
      System.out.printf(
          "allocated per cached pread: byte[] %.2f bytes, direct ByteBuffer %.2f bytes%n",
          arrayBytes / (double) reads, bufferBytes / (double) reads);
      assertTrue(
          arrayBytes < 8L * reads, "byte[] preads allocate " + arrayBytes + " bytes / " + reads);
      assertTrue(
          bufferBytes < 8L * reads,
          "ByteBuffer preads allocate " + bufferBytes + " bytes / " + reads);
      assertFalse(fs.scrClient().metricsSnapshot().shortCircuitReads() < 2L * reads, "scr read");
    }
  }
}
