package io.scr.core.hdfs;

import io.scr.cache.Ticker;
import io.scr.core.ScrClient;
import io.scr.core.ScrKeys;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.read.MappingBudget;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileSystemLinkResolver;
import org.apache.hadoop.fs.GlobalStorageStatistics;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSInputStream;
import org.apache.hadoop.hdfs.DFSOpsCountStatistics;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.ScrDfsInputStreamBase;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * A {@link DistributedFileSystem} whose input streams read local, finalized blocks straight from
 * the replica files (scr integration point 2). Enable it with {@code
 * fs.hdfs.impl=io.scr.core.hdfs.ScrFileSystem}; nothing else changes for the application.
 *
 * <p>{@link #open(Path, int)} returns a real {@code HdfsDataInputStream} wrapping a {@code
 * DFSInputStream} subclass, so code that checks {@code instanceof HdfsDataInputStream} or {@code
 * CanUnbuffer} (HBase) and reads {@code getReadStatistics()} sees short-circuit bytes as it does
 * with stock short-circuit reads. Local blocks are served through the shared {@link Engine}, the
 * block a writer still has open up to the stream's visible length (measured from the local
 * DataNode's memory where it has the scr shim, {@link LocalVisibleLength}); remote replicas,
 * erasure-coded files and any short-circuit failure take the stock code path. Everything other than
 * opening files for read is the stock file system.
 *
 * <p>Owns one reference to the {@link Engine} of its client context, taken in {@link #initialize}
 * and given back in {@link #close()}.
 *
 * <p>Thread-safety: as {@link DistributedFileSystem}; streams are as thread-safe as stock ones
 * (concurrent positional reads are supported).
 */
public class ScrFileSystem extends DistributedFileSystem {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(ScrFileSystem.class);

  private volatile Engine scr;
  private volatile ScrClient handle;
  private volatile boolean verifyChecksum = true;
  private DFSOpsCountStatistics opsCount;
  private volatile MappingBudget mappingBudget;
  private volatile int prefetchMaxBlocks;
  private volatile VisibleLengthRpc visibleLengths;

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    super.initialize(uri, withoutImpossibleStockShortCircuit(conf));
    StorageStatistics ops = GlobalStorageStatistics.INSTANCE.get(DFSOpsCountStatistics.NAME);
    opsCount = ops instanceof DFSOpsCountStatistics ? (DFSOpsCountStatistics) ops : null;
    mappingBudget = mappingBudget(conf);
    prefetchMaxBlocks = Math.max(0, ScrKeys.PREFETCH_MAX_BLOCKS.get(conf::get));
    scr = Engine.acquire(conf);
    handle = ScrClient.acquire(conf); // the same context: a second reference to scr
    visibleLengths =
        new VisibleLengthRpc(
            getConf(),
            getClient().getConf().getSocketTimeout(),
            getClient().getConf().isConnectToDnViaHostname());
  }

  /** The budget of block-file mappings for zero-copy reads, from {@code conf} (null: defaults). */
  static MappingBudget mappingBudget(Configuration conf) {
    Configuration c = conf != null ? conf : new Configuration(false);
    return MappingBudget.of(
        ScrKeys.ZERO_COPY_MAX_MAPPINGS.get(c::get), ScrKeys.ZERO_COPY_MAX_MAPPED_BYTES.get(c::get));
  }

  /** The budget of block-file mappings this file system's streams read zero-copy from. */
  MappingBudget zeroCopyMappingBudget() {
    return mappingBudget;
  }

  /**
   * Where stock short-circuit reads cannot run (no libhadoop), the stock fallback path gets {@code
   * dfs.client.read.shortcircuit=false}: stock would otherwise log, for every client, "The
   * short-circuit local reads feature cannot be used because libhadoop cannot be loaded" while scr
   * reads short-circuit without it. Said once per JVM at INFO instead.
   */
  private static Configuration withoutImpossibleStockShortCircuit(Configuration conf) {
    String reason = org.apache.hadoop.net.unix.DomainSocket.getLoadingFailureReason();
    if (reason == null || !conf.getBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false)) {
      return conf;
    }
    if (STOCK_SHORT_CIRCUIT_OFF_LOGGED.compareAndSet(false, true)) {
      LOG.info(
          "Stock short-circuit reads cannot run in this JVM ({}): ScrFileSystem reads"
              + " short-circuit without libhadoop and turns "
              + ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name()
              + " off for"
              + " its stock fallback path",
          reason);
    }
    Configuration copy = new Configuration(conf);
    copy.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
    return copy;
  }

  private static final java.util.concurrent.atomic.AtomicBoolean STOCK_SHORT_CIRCUIT_OFF_LOGGED =
      new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * A handle on the short-circuit engine this file system's streams use (its figures, leases), held
   * by the file system: it closes with the file system, and closing it earlier is harmless.
   */
  public ScrClient scrClient() {
    ScrClient client = handle;
    if (client == null) {
      throw new IllegalStateException("ScrFileSystem is not initialized or already closed");
    }
    return client;
  }

  /** The engine itself, for this package's streams. */
  Engine engine() {
    Engine client = scr;
    if (client == null) {
      throw new IllegalStateException("ScrFileSystem is not initialized or already closed");
    }
    return client;
  }

  @Override
  public void setVerifyChecksum(boolean verifyChecksum) {
    super.setVerifyChecksum(verifyChecksum);
    this.verifyChecksum = verifyChecksum;
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    statistics.incrementReadOps(1);
    if (opsCount != null) {
      opsCount.incrementOpCounter(DFSOpsCountStatistics.OpType.OPEN);
    }
    Path absolute = fixRelativePart(f);
    return new FileSystemLinkResolver<FSDataInputStream>() {
      @Override
      public FSDataInputStream doCall(Path p) throws IOException {
        return openHere(p, bufferSize);
      }

      @Override
      public FSDataInputStream next(FileSystem fs, Path p) throws IOException {
        return fs.open(p, bufferSize);
      }
    }.resolve(this, absolute);
  }

  private FSDataInputStream openHere(Path p, int bufferSize) throws IOException {
    DFSClient client = getClient();
    ScrDfsInputStreamBase.checkOpen(client);
    String src = ScrDfsInputStreamBase.pathName(this, p);
    Engine engine = engine();
    LocatedBlocks blocks = client.getLocatedBlocks(src, 0);
    if (blocks == null) {
      throw new IOException("Cannot open filename " + src);
    }
    DFSInputStream in;
    if (blocks.getErasureCodingPolicy() != null) {
      in = client.open(src, bufferSize, verifyChecksum); // striped: the stock stream throughout
    } else {
      ScrInputStream scrIn =
          new ScrInputStream(
              client,
              src,
              verifyChecksum,
              blocks,
              engine,
              Ticker.systemTicker(),
              mappingBudget,
              visibleLengths,
              LocalVisibleLength.onOpen(engine, visibleLengths, blocks));
      scrIn.prefetch(prefetchMaxBlocks); // queues the opens; never waits for them
      in = scrIn;
    }
    try {
      return client.createWrappedInputStream(in);
    } catch (IOException | RuntimeException e) {
      in.close();
      throw e;
    }
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      Engine client = scr;
      scr = null;
      ScrClient h = handle;
      handle = null;
      if (h != null) {
        h.close();
      }
      VisibleLengthRpc lengths = visibleLengths;
      if (lengths != null) {
        lengths.close();
      }
      if (client != null) {
        client.close();
      }
    }
  }
}
