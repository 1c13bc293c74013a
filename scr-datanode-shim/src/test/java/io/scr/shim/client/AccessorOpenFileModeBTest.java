package io.scr.shim.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mode B, the replica accessor and a file still open for write, read by the stock {@code
 * DistributedFileSystem}: stock asks the accessor with {@code allowShortCircuit=false} for every
 * block of such a file, and with the shim the accessor serves them all, complete blocks and the
 * block being written up to the reader's visible length, equal to what was written.
 */
class AccessorOpenFileModeBTest {
  private static final int BLOCK = 64 * 1024;
  private static final int CHUNK = 512;

  static {
    // The JVM-wide singletons before the cluster's leak baseline.
    io.scr.shim.JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.SHIM).buildExtension();

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  private static long shortCircuitBytes(FSDataInputStream in) {
    return ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
  }

  /**
   * A writer appends records (ending 1, 511 and 513 bytes past a chunk boundary, and across a block
   * boundary) and hflushes each; after each flush a new stock stream reads the whole file by pread
   * and by a stateful read, and every byte comes through the accessor.
   */
  @Test
  void openFileIsReadShortCircuitThroughTheAccessorUpToItsVisibleLength() throws IOException {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      ScrReplicaAccessorBuilder.class.getName());
                  c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop
                  c.set("scr.client.context", "accessor-open-file");
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    Path path = new Path("/accessor/open-file");
    Random random = new Random(29);
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    int[] ends = {CHUNK + 1, 3 * CHUNK + 511, 5 * CHUNK + 513, BLOCK + 7, BLOCK + 40 * CHUNK + 1};
    long readTotal = 0;
    long shortCircuitTotal = 0;
    try (FSDataOutputStream out = DFS.dfs().fileSystem().create(path)) {
      for (int end : ends) {
        byte[] record = new byte[end - written.size()];
        random.nextBytes(record);
        out.write(record);
        written.write(record);
        out.hflush();
        byte[] expected = written.toByteArray();
        try (FSDataInputStream in = fs.open(path)) {
          byte[] all = new byte[expected.length];
          in.readFully(0, all);
          assertArrayEquals(expected, all, "pread of " + expected.length + " bytes");
          int from = Math.max(0, expected.length - 700);
          byte[] tail = new byte[expected.length - from];
          in.seek(from);
          in.readFully(tail);
          assertArrayEquals(Arrays.copyOfRange(expected, from, expected.length), tail);
          assertEquals(-1, in.read(), "nothing past the visible length");
          readTotal += all.length + tail.length;
          shortCircuitTotal += shortCircuitBytes(in);
        }
      }
    }
    assertEquals(readTotal, shortCircuitTotal, "bytes of the open file read short-circuit");
    assertEquals(0, DFS.dfs().cluster().getNamesystem().getCorruptReplicaBlocks());
  }
}
