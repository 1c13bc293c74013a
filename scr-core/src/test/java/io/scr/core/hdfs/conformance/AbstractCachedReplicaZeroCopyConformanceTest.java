package io.scr.core.hdfs.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Zero-copy reads, the anchored case (stock: {@code TestEnhancedByteBufferAccess
 * #testZeroCopyReadOfCachedData}): once the DataNode caches a block (HDFS centralized caching), its
 * slot is ANCHORABLE, and a zero-copy read <em>without</em> {@code SKIP_CHECKSUMS} and without a
 * pool returns a mapping instead of throwing, because a cached replica was verified when it was
 * cached. Before caching, and again after uncaching, the same read is unsupported. A stock DataNode
 * marks the slots anchorable before it counts the block cached, also slots a stream was granted
 * before the block was cached: a read right after {@code getNumBlocksCached()} says so must succeed
 * on a stream opened earlier. Each subclass names its DataNodes and read paths.
 *
 * <p>The DataNode caches through Hadoop's {@code NoMlockCacheManipulator} (as Hadoop's own tests
 * do), so the test needs no {@code RLIMIT_MEMLOCK} and no libhadoop on the DataNode; everything
 * else is the real cache: the NameNode directive, the DataNode's cache report, and the slot the
 * DataNode marks ANCHORABLE. (It relies on the test log4j configuration keeping Hadoop below DEBUG:
 * at DEBUG, Hadoop 3.4.2's FSEditLogAsync logs cache-op edits through a toString that can throw,
 * failing the RPC.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractCachedReplicaZeroCopyConformanceTest {
  protected static final int BLOCK_SIZE = 64 * 1024;
  protected static final int LENGTH = 2 * BLOCK_SIZE;
  private static final EnumSet<ReadOption> NONE = EnumSet.noneOf(ReadOption.class);

  static {
    // Before the DataNode starts: it checks the memlock limit against its max locked memory.
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.NoMlockCacheManipulator());
  }

  /** The cluster settings that let the DataNode cache the test file, within a second. */
  protected static final Consumer<Configuration> CACHING =
      c -> {
        c.setLong(DFSConfigKeys.DFS_DATANODE_MAX_LOCKED_MEMORY_KEY, LENGTH);
        // Cache and uncache within a second, not the 30 s rescan and 10 s cache report.
        c.setLong(DFSConfigKeys.DFS_NAMENODE_PATH_BASED_CACHE_REFRESH_INTERVAL_MS, 100);
        c.setLong(DFSConfigKeys.DFS_CACHEREPORT_INTERVAL_MSEC_KEY, 200);
      };

  private final Path file = new Path("/zero-copy/cached");
  private byte[] data;

  /** The running cluster, built with {@link #CACHING}. */
  protected abstract MiniDfs dfs();

  /** The read paths to compare on it (the test instance is per class: an instance factory). */
  protected abstract List<ReadPath> paths();

  @BeforeAll
  void writeFile() throws IOException {
    data = dfs().writeRandomFile(file.toString(), LENGTH, new Random().nextLong());
  }

  @AfterAll
  void restoreCacheManipulator() {
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.CacheManipulator());
  }

  @ParameterizedTest
  @MethodSource("paths")
  void aCachedReplicaIsReadZeroCopyWithoutSkippingChecksums(ReadPath path) throws Exception {
    FileSystem fs = path.open(dfs());
    awaitShortCircuit(fs);
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
      assertZeroCopyRead(in, 4096);
    } finally {
      uncache();
    }
  }

  @ParameterizedTest
  @MethodSource("paths")
  void aStreamOpenedBeforeCachingReadsZeroCopyOnceCachedAndNotAfterUncaching(ReadPath path)
      throws Exception {
    FileSystem fs = path.open(dfs());
    awaitShortCircuit(fs);
    uncache();
    try (FSDataInputStream in = fs.open(file)) {
      byte[] first = new byte[4096];
      in.readFully(0, first); // the block's replica is open: its slot granted unanchorable
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4096), first);
      assertThrows(
          UnsupportedOperationException.class,
          () -> in.read(null, 4096, NONE),
          "not cached: without SKIP_CHECKSUMS and a pool there is no zero-copy read");
      in.seek(0);

      cache();
      // At once: the DataNode made the slot anchorable before it counted the block cached.
      assertZeroCopyRead(in, 4096);

      uncache();
      in.seek(0);
      assertThrows(
          UnsupportedOperationException.class,
          () -> in.read(null, 4096, NONE),
          "uncached: the slot is no longer anchorable, so there is no zero-copy read again");
    } finally {
      uncache();
    }
  }

  /**
   * Reads the file until a read is short-circuit: on a loaded machine the first replica open can
   * find the DataNode's health suspect and go to TCP, and a zero-copy read has no TCP to go to.
   */
  private void awaitShortCircuit(FileSystem fs) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (true) {
      try (FSDataInputStream in = fs.open(file)) {
        byte[] all = new byte[LENGTH];
        in.readFully(0, all);
        if (((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead() > 0) {
          return;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no read of " + file + " was short-circuit within 60 s");
      }
      Thread.sleep(100);
    }
  }

  private void assertZeroCopyRead(FSDataInputStream in, int length) throws IOException {
    long pos = in.getPos();
    long before = ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead();
    ByteBuffer b = in.read(null, length, NONE);
    assertNotNull(b, "cached: a zero-copy read needs no option and no pool");
    assertTrue(b.isReadOnly());
    byte[] got = new byte[b.remaining()];
    b.duplicate().get(got);
    assertEquals(length, got.length);
    assertArrayEquals(Arrays.copyOfRange(data, (int) pos, (int) pos + length), got);
    assertEquals(
        before + length,
        ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead(),
        "counted as zero-copy bytes");
    in.releaseBuffer(b);
  }

  private void cache() throws Exception {
    DistributedFileSystem admin = dfs().fileSystem();
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
    DistributedFileSystem admin = dfs().fileSystem();
    if (admin.listCachePools().hasNext()) {
      admin.removeCachePool("pool"); // removes its directives; the DataNode uncaches
    }
    awaitCachedBlocks(0);
  }

  private void awaitCachedBlocks(long blocks) throws InterruptedException {
    FsDatasetSpi<?> dataset = dfs().cluster().getDataNodes().get(0).getFSDataset();
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
