package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Reads of a file being written while its pipeline misbehaves: the DataNode acknowledged bytes it
 * has not written yet, a downstream DataNode dies (pipeline recovery bumps the generation stamp), a
 * finalized block is appended to, the writer dies. In every case the stream the user holds returns
 * the written bytes, never one past its visible length, and nothing is reported corrupt.
 */
class BeingWrittenFaultTest {
  private static final int BLOCK = 64 * 1024;
  private static final int CHUNK = 512;

  private static MiniDfs start(DataNodeMode mode, int dataNodes) throws IOException {
    return MiniDfs.builder().blockSize(BLOCK).dataNodes(dataNodes).mode(mode).start();
  }

  private static ScrFileSystem scrFileSystem(MiniDfs dfs, String socketPath) {
    return dfs.newFileSystem(
        c -> {
          c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
          c.set("scr.client.context", "being-written-" + System.nanoTime());
          if (socketPath != null) {
            c.set("scr.client.socket.paths", socketPath);
          }
        });
  }

  private static ScrInputStream unwrap(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  private static long shortCircuitBytes(FSDataInputStream in) {
    return ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static int indexOf(MiniDfs dfs, DatanodeInfo dn) {
    for (int i = 0; i < dfs.cluster().getDataNodes().size(); i++) {
      if (dfs.cluster().getDataNodes().get(i).getXferPort() == dn.getXferPort()) {
        return i;
      }
    }
    throw new AssertionError("no DataNode at " + dn);
  }

  private static ThreadGroup threadGroupOf(DataNode dn) throws ReflectiveOperationException {
    Field f = DataNode.class.getDeclaredField("threadGroup");
    f.setAccessible(true);
    return (ThreadGroup) f.get(dn);
  }

  /**
   * The pipeline's first DataNode acknowledges a packet before it writes it (it queues the ack
   * before its own disk write; the last DataNode writes first): held after writing the data and
   * before writing its checksums, its visible length is ahead of its bytes on disk. A stream
   * reading through it returns every visible byte, the written ones, and none of the bytes that
   * DataNode has not written with their checksums comes short-circuit in mode B.
   */
  @ParameterizedTest
  @EnumSource(
      value = DataNodeMode.class,
      names = {"STOCK_SCR", "SHIM"})
  void visibleLengthAheadOfTheBytesOnDisk(DataNodeMode mode) throws Exception {
    try (MiniDfs dfs = start(mode, 2)) {
      Path path = new Path("/being-written/ahead");
      byte[] data = random(4 * CHUNK + 300, 11);
      int first = 2 * CHUNK + 100;
      DataNodeFaultInjector old = DataNodeFaultInjector.get();
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      try (FSDataOutputStream out = dfs.fileSystem().create(path, (short) 2)) {
        out.write(data, 0, first);
        out.hflush();
        DatanodeInfo head = ((DFSOutputStream) out.getWrappedStream()).getPipeline()[0];
        int headIndex = indexOf(dfs, head);
        ThreadGroup headGroup = threadGroupOf(dfs.cluster().getDataNodes().get(headIndex));
        DataNodeFaultInjector.set(
            new DataNodeFaultInjector() {
              @Override
              public void delayWriteToDisk() {
                if (Thread.currentThread().getThreadGroup() == headGroup && held.getCount() > 0) {
                  held.countDown();
                  try {
                    release.await(20, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }
              }
            });
        out.write(data, first, data.length - first);
        out.hflush(); // acknowledged by both, while the head has not written its checksums
        assertTrue(held.await(20, TimeUnit.SECONDS), "the head DataNode was held");
        ScrFileSystem fs = scrFileSystem(dfs, dfs.socketPath(headIndex));
        try (FSDataInputStream in = fs.open(path)) {
          assertEquals(data.length, unwrap(in).getFileLength());
          StreamCounters counters = unwrap(in).counters();
          Thread releaser =
              new Thread(
                  () -> {
                    // The head writes the rest once the read has gone stock for it (and its
                    // DataNode waits for the bytes): a slow start of the read must not find them
                    // written already.
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    try {
                      while (counters.stockReads() == 0 && System.nanoTime() < deadline) {
                        Thread.sleep(10);
                      }
                      Thread.sleep(200);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                    release.countDown();
                  });
          releaser.start();
          byte[] got = new byte[data.length];
          in.readFully(0, got);
          releaser.join();
          assertArrayEquals(data, got);
          long sc = shortCircuitBytes(in);
          if (mode == DataNodeMode.SHIM) {
            assertEquals(first, sc, "only what the DataNode wrote with its checksums");
          } else {
            assertTrue(
                sc >= 2 * CHUNK && sc <= first,
                "whole chunks written: "
                    + sc
                    + " short-circuit, tail fallbacks "
                    + unwrap(in).counters().tailFallbacks()
                    + ", fallbacks "
                    + unwrap(in).counters().fallbacks());
          }
          assertTrue(
              unwrap(in).counters().tailFallbacks() > 0, "the rest went stock, not as corruption");
          assertEquals(0, unwrap(in).counters().checksumFallbacks());
        }
      } finally {
        release.countDown();
        DataNodeFaultInjector.set(old);
      }
      assertEquals(0, dfs.cluster().getNamesystem().getCorruptReplicaBlocks());
    }
  }

  /**
   * A downstream DataNode dies mid-write while a stream holds a lease on the reader's replica:
   * pipeline recovery truncates the replica in place and bumps its generation stamp. The stream
   * opened before reads the written bytes (mode B sees the new generation stamp and goes stock
   * rather than read old fds); a stream opened after reads the block being written short-circuit
   * through new fds.
   */
  @ParameterizedTest
  @EnumSource(
      value = DataNodeMode.class,
      names = {"STOCK_SCR", "SHIM"})
  void pipelineRecoveryWhileALeaseIsOpen(DataNodeMode mode) throws Exception {
    try (MiniDfs dfs = start(mode, 3)) {
      Path path = new Path("/being-written/recovery");
      byte[] data = random(BLOCK / 2, 12);
      int first = 10 * CHUNK + 1;
      // Recover with the two DataNodes left rather than look for a replacement (there is none).
      DistributedFileSystem writer =
          dfs.newFileSystem(
              c -> c.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER"));
      try (FSDataOutputStream out = writer.create(path, (short) 3)) {
        out.write(data, 0, first);
        out.hflush();
        DatanodeInfo[] pipeline = ((DFSOutputStream) out.getWrappedStream()).getPipeline();
        int readerIndex = indexOf(dfs, pipeline[0]);
        ScrFileSystem fs = scrFileSystem(dfs, dfs.socketPath(readerIndex));
        try (FSDataInputStream before = fs.open(path)) {
          byte[] got = new byte[first];
          before.readFully(0, got);
          assertArrayEquals(Arrays.copyOf(data, first), got);
          assertTrue(shortCircuitBytes(before) > 0);
          long gs = DFSTestUtil.getFirstBlock(dfs.fileSystem(), path).getGenerationStamp();
          dfs.cluster().stopDataNode(indexOf(dfs, pipeline[2])); // downstream: the last one
          out.write(data, first, data.length - first);
          out.hflush(); // recovers the pipeline: a new generation stamp
          assertTrue(
              DFSTestUtil.getFirstBlock(dfs.fileSystem(), path).getGenerationStamp() > gs,
              "pipeline recovery bumped the generation stamp");
          before.readFully(0, got);
          assertArrayEquals(Arrays.copyOf(data, first), got, "the old stream after recovery");
          assertEquals(0, unwrap(before).counters().checksumFallbacks());
        }
        try (FSDataInputStream after = fs.open(path)) {
          byte[] got = new byte[data.length];
          after.readFully(0, got);
          assertArrayEquals(data, got);
          assertTrue(shortCircuitBytes(after) >= data.length - CHUNK, "new fds, short-circuit");
        }
      }
      assertEquals(0, dfs.cluster().getNamesystem().getCorruptReplicaBlocks());
    }
  }

  /**
   * A finalized block a stream has read is appended to (its replica moves back to rbw/ under a new
   * generation stamp, its last checksum rewritten): the stream keeps returning the bytes it saw,
   * and a new stream reads the block being written short-circuit.
   */
  @ParameterizedTest
  @EnumSource(
      value = DataNodeMode.class,
      names = {"STOCK_SCR", "SHIM"})
  void appendToAFinalizedBlockAReaderHolds(DataNodeMode mode) throws Exception {
    try (MiniDfs dfs = start(mode, 1)) {
      Path path = new Path("/being-written/append");
      byte[] data = random(6 * CHUNK + 77, 13);
      int first = 3 * CHUNK + 200;
      DistributedFileSystem writer = dfs.fileSystem();
      try (FSDataOutputStream out = writer.create(path)) {
        out.write(data, 0, first);
      }
      ScrFileSystem fs = scrFileSystem(dfs, null);
      try (FSDataInputStream held = fs.open(path)) {
        byte[] got = new byte[first];
        held.readFully(0, got);
        assertEquals(first, shortCircuitBytes(held));
        try (FSDataOutputStream out = writer.append(path)) {
          out.write(data, first, data.length - first);
          out.hflush();
          held.readFully(0, got);
          assertArrayEquals(Arrays.copyOf(data, first), got, "the held stream after the append");
          assertEquals(-1, held.read(first, new byte[1], 0, 1), "not past its visible length");
          try (FSDataInputStream fresh = fs.open(path)) {
            byte[] all = new byte[data.length];
            fresh.readFully(0, all);
            assertArrayEquals(data, all);
            assertEquals(data.length, shortCircuitBytes(fresh), "the appended block short-circuit");
          }
        }
      }
      assertEquals(0, dfs.cluster().getNamesystem().getCorruptReplicaBlocks());
    }
  }

  /**
   * The writer dies; lease recovery closes the file at the length its DataNodes hold. A stream
   * opened before returns the bytes up to its visible length; one opened after, the recovered file,
   * equal to the written prefix.
   */
  @ParameterizedTest
  @EnumSource(
      value = DataNodeMode.class,
      names = {"STOCK_SCR", "SHIM"})
  void writerDiesAndLeaseRecoveryClosesTheFile(DataNodeMode mode) throws Exception {
    try (MiniDfs dfs = start(mode, 1)) {
      Path path = new Path("/being-written/writer-dies");
      byte[] data = random(2 * BLOCK / 3, 14);
      int first = 20 * CHUNK + 511;
      DistributedFileSystem writer = dfs.newFileSystem(c -> {});
      FSDataOutputStream out = writer.create(path);
      out.write(data, 0, first);
      out.hflush();
      ScrFileSystem fs = scrFileSystem(dfs, null);
      try (FSDataInputStream in = fs.open(path)) {
        byte[] early = new byte[first];
        in.readFully(0, early);
        assertArrayEquals(Arrays.copyOf(data, first), early);
        assertTrue(shortCircuitBytes(in) >= 20 * CHUNK, "short-circuit " + shortCircuitBytes(in));
        DFSTestUtil.abortStream((DFSOutputStream) out.getWrappedStream()); // the writer dies
        writer.close();
        DistributedFileSystem other = dfs.fileSystem();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!other.recoverLease(path)) {
          assertTrue(System.nanoTime() < deadline, "lease recovery did not finish");
          Thread.sleep(100);
        }
        byte[] got = new byte[first];
        in.readFully(0, got);
        assertArrayEquals(Arrays.copyOf(data, first), got);
        // Recovery gave the replica a new generation stamp: the stream's block is read stock now.
        assertEquals(-1, in.read(first, new byte[1], 0, 1));
        assertEquals(0, unwrap(in).counters().checksumFallbacks());
      }
      try (FSDataInputStream in = fs.open(path)) {
        long length = unwrap(in).getFileLength();
        assertTrue(length >= first && length <= data.length, "recovered length " + length);
        byte[] got = new byte[(int) length];
        in.readFully(0, got);
        assertArrayEquals(Arrays.copyOf(data, (int) length), got);
        assertEquals(length, shortCircuitBytes(in), "recovered and finalized: short-circuit");
      }
      assertEquals(0, dfs.cluster().getNamesystem().getCorruptReplicaBlocks());
    }
  }

  /**
   * The DataNode restarts mid-write: its replica loads as RWR, whose visible length is unknown
   * (HDFS-17863). Opening the file fails, or succeeds, exactly as it does for the stock client.
   */
  @ParameterizedTest
  @EnumSource(
      value = DataNodeMode.class,
      names = {"STOCK_SCR", "SHIM"})
  void dataNodeRestartMidWriteBehavesAsStock(DataNodeMode mode) throws Exception {
    try (MiniDfs dfs = start(mode, 1)) {
      Path path = new Path("/being-written/restart");
      byte[] data = random(5 * CHUNK + 3, 15);
      DistributedFileSystem writer = dfs.newFileSystem(c -> {});
      FSDataOutputStream out = writer.create(path);
      out.write(data);
      out.hflush();
      assertTrue(dfs.cluster().restartDataNode(0, true), "restarted");
      dfs.cluster().waitActive();
      ScrFileSystem fs = scrFileSystem(dfs, null);
      String stock = outcome(dfs.fileSystem(), path, data);
      String scr = outcome(fs, path, data);
      assertEquals(stock, scr, "ScrFileSystem behaves as stock on an RWR replica");
      DFSTestUtil.abortStream((DFSOutputStream) out.getWrappedStream());
      writer.close();
    }
  }

  private static String outcome(org.apache.hadoop.fs.FileSystem fs, Path path, byte[] data) {
    try (FSDataInputStream in = fs.open(path)) {
      byte[] got = new byte[(int) ((HdfsDataInputStream) in).getVisibleLength()];
      in.readFully(0, got);
      assertArrayEquals(Arrays.copyOf(data, got.length), got);
      return "read " + got.length + " bytes";
    } catch (IOException e) {
      return e.getClass().getName();
    }
  }
}
