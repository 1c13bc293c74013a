package io.scr.core.hdfs.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Random;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.CacheDirectiveInfo;
import org.apache.hadoop.hdfs.protocol.CachePoolInfo;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.condition.DisabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Zero-copy reads, the anchored case (stock: {@code TestEnhancedByteBufferAccess
 * #testZeroCopyReadOfCachedData}): once the DataNode caches a block (HDFS centralized caching), its
 * slot is ANCHORABLE, and a zero-copy read <em>without</em> {@code SKIP_CHECKSUMS} and without a
 * pool returns a mapping instead of throwing, because a cached replica was verified when it was
 * cached. Before caching the same read is unsupported. Stock with libhadoop is the reference;
 * ScrFileSystem must do the same on the same cluster.
 *
 * <p>The DataNode caches through Hadoop's {@code NoMlockCacheManipulator} (as Hadoop's own tests
 * do), so the test needs no {@code RLIMIT_MEMLOCK}; everything else is the real cache: the NameNode
 * directive, the DataNode's cache report, and the slot the DataNode marks ANCHORABLE. (It relies on
 * scr-core's test log4j configuration keeping Hadoop below DEBUG: at DEBUG, Hadoop 3.4.2's
 * FSEditLogAsync logs cache-op edits through a toString that can throw, failing the RPC.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@DisabledIf(
    value = "io.scr.core.hdfs.conformance.StockLibhadoop#unusable",
    disabledReason = "stock DataNode needs libhadoop; see StockLibhadoop.REASON")
class CachedReplicaZeroCopyConformanceTest {
  private static final int BLOCK_SIZE = 64 * 1024;
  private static final int LENGTH = 2 * BLOCK_SIZE;
  private static final EnumSet<ReadOption> NONE = EnumSet.noneOf(ReadOption.class);

  static {
    // Before the DataNode starts: it checks the memlock limit against its max locked memory.
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.NoMlockCacheManipulator());
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK_SIZE)
          .mode(DataNodeMode.STOCK_SCR)
          .configure(
              c -> {
                c.setLong(DFSConfigKeys.DFS_DATANODE_MAX_LOCKED_MEMORY_KEY, LENGTH);
                // Cache and uncache within a second, not the 30 s rescan and 10 s cache report.
                c.setLong(DFSConfigKeys.DFS_NAMENODE_PATH_BASED_CACHE_REFRESH_INTERVAL_MS, 100);
                c.setLong(DFSConfigKeys.DFS_CACHEREPORT_INTERVAL_MSEC_KEY, 200);
              })
          .buildExtension();

  private final Path file = new Path("/zero-copy/cached");
  private byte[] data;

  @BeforeAll
  void writeFile() throws IOException {
    data = DFS.dfs().writeRandomFile(file.toString(), LENGTH, new Random().nextLong());
  }

  @AfterAll
  void restoreCacheManipulator() {
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.CacheManipulator());
  }

  @ParameterizedTest
  @EnumSource(
      value = ReadPath.class,
      names = {"STOCK_SCR", "SCR_FILESYSTEM"})
  void aCachedReplicaIsReadZeroCopyWithoutSkippingChecksums(ReadPath path) throws Exception {
    FileSystem fs = path.open(DFS.dfs());
    uncache();
    try (FSDataInputStream in = fs.open(file)) {
      assertThrows(
          UnsupportedOperationException.class,
          () -> in.read(null, 4096, NONE),
          "not cached: without SKIP_CHECKSUMS and a pool there is no zero-copy read");
    }
    cache();
    // A stream opened after the DataNode cached the block: its slot is registered ANCHORABLE.
    try (FSDataInputStream in = fs.open(file)) {
      ByteBuffer b = in.read(null, 4096, NONE);
      assertNotNull(b, "cached: a zero-copy read needs no option and no pool");
      assertTrue(b.isReadOnly());
      byte[] got = new byte[b.remaining()];
      b.duplicate().get(got);
      assertEquals(4096, got.length);
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4096), got);
      assertEquals(
          4096,
          ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead(),
          "counted as zero-copy bytes");
      in.releaseBuffer(b);
    } finally {
      uncache();
    }
  }

  private void cache() throws Exception {
    DistributedFileSystem admin = DFS.dfs().fileSystem();
    if (admin.listCachePools().hasNext()) {
      admin.removeCachePool("pool");
    }
    admin.addCachePool(new CachePoolInfo("pool"));
    admin.addCacheDirective(
        new CacheDirectiveInfo.Builder()
            .setPath(file)
            .setReplication((short) 1)
            .setPool("pool")
            .build());
    awaitCachedBlocks(LENGTH / BLOCK_SIZE);
  }

  private void uncache() throws Exception {
    DistributedFileSystem admin = DFS.dfs().fileSystem();
    if (admin.listCachePools().hasNext()) {
      admin.removeCachePool("pool"); // removes its directives; the DataNode uncaches
    }
    awaitCachedBlocks(0);
  }

  private void awaitCachedBlocks(long blocks) throws InterruptedException {
    FsDatasetSpi<?> dataset = DFS.dfs().cluster().getDataNodes().get(0).getFSDataset();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (dataset.getNumBlocksCached() != blocks) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "the DataNode caches " + dataset.getNumBlocksCached() + " blocks, expected " + blocks);
      }
      Thread.sleep(50);
    }
  }
}
