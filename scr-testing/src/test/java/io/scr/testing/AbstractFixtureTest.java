package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.Test;

/** Proves the fixture is real: bytes round-trip and the read path is the one the mode promises. */
abstract class AbstractFixtureTest {
  static final int BLOCK_SIZE = 256 * 1024;

  abstract MiniDfs dfs();

  /** Short-circuit bytes expected for a full read of {@code length} bytes. */
  abstract long expectedShortCircuitBytes(long length);

  @Test
  void writesAndReadsBackAcrossBlocks() throws IOException {
    int length = 3 * BLOCK_SIZE + 1234;
    byte[] written = dfs().writeRandomFile("/fixture/multi-block", length, 42);
    DistributedFileSystem fs = dfs().fileSystem();

    byte[] read = new byte[length];
    long shortCircuitBytes;
    long totalBytes;
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path("/fixture/multi-block"))) {
      in.readFully(0, read);
      shortCircuitBytes = in.getReadStatistics().getTotalShortCircuitBytesRead();
      totalBytes = in.getReadStatistics().getTotalBytesRead();
    }

    assertArrayEquals(written, read);
    assertEquals(length, totalBytes);
    assertEquals(expectedShortCircuitBytes(length), shortCircuitBytes);
  }

  @Test
  void clusterHasTheRequestedShape() throws IOException {
    assertEquals(BLOCK_SIZE, dfs().clientConf().getLong("dfs.blocksize", 0));
    assertEquals(1, dfs().cluster().getDataNodes().size());
    dfs().writeRandomFile("/fixture/one-block", BLOCK_SIZE, 7);
    assertEquals(
        1,
        dfs()
            .fileSystem()
            .getClient()
            .getLocatedBlocks("/fixture/one-block", 0)
            .locatedBlockCount());
  }
}
