package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.scr.core.internal.read.MappingBudget;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.io.ByteBufferPool;
import org.apache.hadoop.io.ElasticByteBufferPool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What only scr's zero-copy reads promise (stock's semantics are {@code
 * AbstractZeroCopyConformanceTest}'s): a buffer holds its replica until released; the mapping
 * budget bounds the mapped block files and a read beyond it copies, counted; a block file truncated
 * under its mapping is refused and read another way, never faulting the process; buffers the caller
 * never released are given back when the stream closes and read zeros once the replica is closed.
 */
class ScrZeroCopyReadTest {
  private static final int BLOCK = 64 * 1024;
  private static final EnumSet<ReadOption> SKIP = EnumSet.of(ReadOption.SKIP_CHECKSUMS);

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static ScrFileSystem fileSystem(String context, int maxMappings) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              c.setBoolean("dfs.client.read.shortcircuit", false); // every zero-copy byte is scr's
              c.set("scr.client.context", context);
              c.setInt("scr.client.zero-copy.max-mappings", maxMappings);
              // A stock read of a truncated replica fails: retry it without seconds of backoff.
              c.setInt("dfs.client.retry.window.base", 10);
              // These tests count leases and mappings: a prefetch thread leasing the file's other
              // block on open would hold one for a moment (failed once in CI).
              c.setInt("scr.client.prefetch.max-blocks", 0);
            });
  }

  private static ScrInputStream unwrap(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  /** Cached replicas with at least one lease open. */
  private static int leased(ScrFileSystem fs) {
    return fs.engine().cacheStats().leasedEntryCount();
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Test
  void aBufferIsServedFromTheMappingAndHeldUntilReleased() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/zc/held", 2 * BLOCK, 1);
    ScrFileSystem fs = fileSystem("zc-held", 8);
    try (FSDataInputStream in = fs.open(new Path("/zc/held"))) {
      ScrInputStream scr = unwrap(in);
      ByteBuffer a = in.read(null, 1000, SKIP);
      ByteBuffer b = in.read(null, BLOCK, SKIP);
      assertTrue(a.isDirect() && a.isReadOnly());
      assertEquals(BLOCK - 1000, b.remaining());
      assertArrayEquals(Arrays.copyOfRange(data, 1000, BLOCK), bytes(b));
      assertEquals(2, scr.counters().zeroCopyReads());
      assertEquals(0, scr.counters().zeroCopyFallbacks());
      assertEquals(2, scr.counters().outstandingZeroCopyBuffers());
      assertEquals(1, leased(fs), "the buffers hold their replica's leases");
      MappingBudget budget = fs.zeroCopyMappingBudget();
      assertEquals(1, budget.mappings(), "one mapping of the block file serves both");
      assertEquals(BLOCK, budget.bytes());
      in.releaseBuffer(a);
      in.releaseBuffer(b);
      assertEquals(0, scr.counters().outstandingZeroCopyBuffers());
      assertEquals(0, leased(fs));
      assertEquals(1, budget.mappings(), "the mapping lives as long as its cached replica");
    }
  }

  @Test
  void beyondTheMappingBudgetAReadCopiesAndIsCounted() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/zc/budget", 2 * BLOCK, 2);
    ScrFileSystem fs = fileSystem("zc-budget", 1);
    ByteBufferPool pool = new ElasticByteBufferPool();
    try (FSDataInputStream in = fs.open(new Path("/zc/budget"))) {
      ScrInputStream scr = unwrap(in);
      ByteBuffer first = in.read(null, BLOCK, SKIP);
      assertEquals(BLOCK, first.remaining());
      in.releaseBuffer(first);
      // The second block's file would be a second mapping: no zero copy, so no pool, no read.
      assertThrows(UnsupportedOperationException.class, () -> in.read(null, BLOCK, SKIP));
      assertEquals(BLOCK, in.getPos());
      ByteBuffer copy = in.read(pool, BLOCK, SKIP);
      assertArrayEquals(Arrays.copyOfRange(data, BLOCK, 2 * BLOCK), bytes(copy));
      in.releaseBuffer(copy);
      assertEquals(1, scr.counters().zeroCopyReads());
      assertEquals(2, scr.counters().zeroCopyFallbacks());
      assertEquals(2, fs.zeroCopyMappingBudget().refusals());
      assertEquals(
          BLOCK, ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead());
      assertEquals(
          2 * BLOCK,
          ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
    }
  }

  @Test
  void aBlockFileTruncatedUnderItsMappingIsReadAnotherWayWithoutAFault() throws Exception {
    String file = "/zc/truncated";
    DFS.dfs().writeRandomFile(file, BLOCK, 3);
    ScrFileSystem fs = fileSystem("zc-truncated", 8);
    ExtendedBlock block = fs.getClient().getLocatedBlocks(file, 0).get(0).getBlock();
    try (FSDataInputStream in = fs.open(new Path(file))) {
      ScrInputStream scr = unwrap(in);
      in.releaseBuffer(in.read(null, 10, SKIP)); // the block file is mapped now
      assertEquals(1, scr.counters().zeroCopyReads());
      DFS.dfs().cluster().getMaterializedReplica(0, block).truncateData(4096);
      in.seek(8192);
      ByteBuffer copy = null;
      try {
        copy = in.read(new ElasticByteBufferPool(), 4096, SKIP);
      } catch (IOException stockFailedToo) {
        // The stock read of the truncated replica may fail as well: an exception, not a crash.
      }
      assertEquals(1, scr.counters().zeroCopyReads(), "nothing lent from the truncated range");
      assertEquals(1, scr.counters().zeroCopyFallbacks());
      assertTrue(scr.counters().fallbacks() >= 1, "the block went the stock way");
      if (copy != null) {
        in.releaseBuffer(copy);
      }
    }
  }

  @Test
  void unreleasedBuffersAreGivenBackAtCloseAndReadZerosOnceTheReplicaCloses() throws Exception {
    byte[] data = DFS.dfs().writeRandomFile("/zc/unreleased", BLOCK, 4);
    ScrFileSystem fs = fileSystem("zc-unreleased", 8);
    ByteBuffer kept;
    FSDataInputStream in = fs.open(new Path("/zc/unreleased"));
    kept = in.read(null, BLOCK, SKIP);
    assertNotNull(kept);
    assertArrayEquals(data, bytes(kept));
    in.close(); // the caller's bug: never released
    assertEquals(0, unwrap(in).counters().outstandingZeroCopyBuffers());
    assertEquals(0, leased(fs), "close gave the buffer's lease back");
    fs.close(); // the engine closes its replicas, and with them the mapping
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!Arrays.equals(new byte[BLOCK], bytes(kept))) {
      if (System.nanoTime() > deadline) {
        fail("the unreleased buffer still reads the block after its replica closed");
      }
      Thread.sleep(10); // the cache closes replicas on its closer thread
    }
  }
}
