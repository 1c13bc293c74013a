package io.scr.benchmarks.read;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.ScrClient;
import io.scr.core.ScrKeys;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * The competitors of the read benchmarks, one adapter each: which cluster a path needs ({@link
 * #clusterMode()}), the client settings that select it, and how it reads. Every benchmark in this
 * package takes a {@code path} parameter of this type, so one JMH run compares all of them on the
 * same machine.
 *
 * <ul>
 *   <li>{@link #RAW_PREAD}: the physical limit.
 *   <li>Stock HDFS 3.4.2: {@link #STOCK_TCP}, and short-circuit reads with libhadoop against a
 *       stock DataNode with three buffer sizes ({@link #STOCK_SCR_DEFAULT}, {@link
 *       #STOCK_SCR_HBASE}, {@link #STOCK_SCR_TUNED}).
 *   <li>scr in mode A (stock DataNode with libhadoop): {@link #SCR_ACCESSOR}, {@link
 *       #SCR_FILESYSTEM}; in mode B (the scr shim DataNode plugin, no libhadoop): {@link
 *       #SCR_ACCESSOR_SHIM}, {@link #SCR_FILESYSTEM_SHIM}. scr paths run with default scr settings,
 *       but {@link #SCR_FILESYSTEM_MAPPED}: mapped reads, off by default, turned on.
 * </ul>
 */
public enum ReadPathType {
  /**
   * A raw {@link FileChannel} pread of the DataNode's block files: the physical limit, no checksums
   * and no HDFS client at all.
   */
  RAW_PREAD(DataNodeMode.STOCK_SCR, c -> {}),
  /** Stock short-circuit reads, default 1 MiB {@code dfs.client.read.shortcircuit.buffer.size}. */
  STOCK_SCR_DEFAULT(DataNodeMode.STOCK_SCR, c -> {}),
  /** Stock short-circuit reads with the 128 KiB buffer HBase deployments set. */
  STOCK_SCR_HBASE(
      DataNodeMode.STOCK_SCR, c -> c.setInt("dfs.client.read.shortcircuit.buffer.size", 131072)),
  /**
   * Stock short-circuit reads as an operator tunes them after an odyssey: a 16 KiB buffer for small
   * preads and a replica cache of 4096 entries ({@code dfs.client.read.shortcircuit.streams
   * .cache.size}, default 256).
   */
  STOCK_SCR_TUNED(
      DataNodeMode.STOCK_SCR,
      c -> {
        c.setInt("dfs.client.read.shortcircuit.buffer.size", 16384);
        c.setInt(
            "dfs.client.read.shortcircuit.streams.cache.size", ReadPathType.STOCK_TUNED_CACHE_SIZE);
      }),
  /** Stock client over TCP to the local DataNode. */
  STOCK_TCP(
      DataNodeMode.STOCK_SCR,
      c -> c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false)),
  /** Mode A: stock {@code DistributedFileSystem} with the scr replica accessor. */
  SCR_ACCESSOR(DataNodeMode.STOCK_SCR, ReadPathType::accessor),
  /** Mode A: {@code io.scr.core.hdfs.ScrFileSystem}. */
  SCR_FILESYSTEM(DataNodeMode.STOCK_SCR, ReadPathType::fileSystem),
  /** Mode B: the scr replica accessor against a DataNode running the scr shim. */
  SCR_ACCESSOR_SHIM(DataNodeMode.SHIM, ReadPathType::accessor),
  /** Mode B: {@code ScrFileSystem} against a DataNode running the scr shim. */
  SCR_FILESYSTEM_SHIM(DataNodeMode.SHIM, ReadPathType::fileSystem),
  /**
   * Mode A: {@code ScrFileSystem} with mapped reads on ({@code scr.client.read.mapped.enabled}, off
   * by default: a read of a hot replica is a copy from a mapping of its block file, no {@code
   * pread}).
   */
  SCR_FILESYSTEM_MAPPED(
      DataNodeMode.STOCK_SCR,
      c -> {
        fileSystem(c);
        c.setBoolean(ScrKeys.READ_MAPPED_ENABLED.name(), true);
      });

  /** The replica cache size {@link #STOCK_SCR_TUNED} sets (stock's default is 256). */
  public static final int STOCK_TUNED_CACHE_SIZE = 4096;

  static final String ACCESSOR_BUILDER = "io.scr.core.hdfs.ScrReplicaAccessorBuilder";
  static final String FILE_SYSTEM = "io.scr.core.hdfs.ScrFileSystem";

  private final DataNodeMode clusterMode;
  private final Consumer<Configuration> client;

  ReadPathType(DataNodeMode clusterMode, Consumer<Configuration> client) {
    this.clusterMode = clusterMode;
    this.client = client;
  }

  private static void accessor(Configuration c) {
    c.set("dfs.client.replica.accessor.builder.classes", ACCESSOR_BUILDER);
    // The accessor is the opt-in; the stock local reader (and libhadoop) stays out of the way.
    c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), false);
    scrSockets(c);
  }

  private static void fileSystem(Configuration c) {
    c.set("fs.hdfs.impl", FILE_SYSTEM);
    c.setBoolean(ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(), true);
    scrSockets(c);
  }

  /** In mode B the scr client reads the shim's socket; in mode A the stock socket path. */
  private static void scrSockets(Configuration c) {
    String shim = c.get(MiniDfs.SHIM_SOCKET_PATH_KEY);
    if (shim != null) {
      c.set(ScrKeys.CLIENT_SOCKET_PATHS.name(), shim);
    }
  }

  /** The DataNode mode of the cluster this path reads from. */
  public DataNodeMode clusterMode() {
    return clusterMode;
  }

  /** Whether this path is served by scr (its counters come from {@link ScrClient}). */
  public boolean isScr() {
    return name().startsWith("SCR_");
  }

  /** Whether this path is stock short-circuit reads (its replica cache is stock's). */
  public boolean isStockShortCircuit() {
    return name().startsWith("STOCK_SCR");
  }

  /**
   * Starts a one-DataNode cluster of this path's mode with {@code blockSize} blocks and {@code
   * extra} settings on cluster and client (e.g. prefetching every block location at open).
   */
  public MiniDfs startCluster(long blockSize, Consumer<Configuration> extra) throws IOException {
    if (clusterMode == DataNodeMode.STOCK_SCR) {
      StockNative.requireAvailable();
    }
    return MiniDfs.builder()
        .dataNodes(1)
        .blockSize(blockSize)
        .mode(clusterMode)
        .configure(extra)
        .start();
  }

  /** A new, uncached file system with this path's client settings; the cluster closes it. */
  public FileSystem newFileSystem(MiniDfs dfs, Consumer<Configuration> extra) {
    return dfs.newFileSystem(
        c -> {
          client.accept(c);
          extra.accept(c);
        });
  }

  /** Opens {@code file} for reads through this path. */
  public Reader open(MiniDfs dfs, String file) throws IOException {
    return open(dfs, file, c -> {});
  }

  /** Opens {@code file} for reads through this path with {@code extra} client settings. */
  public Reader open(MiniDfs dfs, String file, Consumer<Configuration> extra) throws IOException {
    if (this == RAW_PREAD) {
      return new RawReader(dfs, file);
    }
    FileSystem fs = newFileSystem(dfs, extra);
    return new StreamReader(fs, fs.open(new Path(file)));
  }

  /**
   * The scr engine's replica-cache counters for a file system of an scr path (same client context,
   * so the same engine the reads used), or null for other paths.
   */
  public static LeaseCacheStats scrCacheStats(FileSystem fs) {
    if (fs == null) {
      return null;
    }
    try (ScrClient engine = ScrClient.acquire(fs.getConf())) {
      return engine.cacheStats();
    }
  }

  /** Closes the scr engines the replica accessor holds per client context (JVM-wide). */
  public static void releaseAccessorEngines() {
    io.scr.core.hdfs.ScrReplicaAccessorBuilder.releaseAll();
  }

  /** A buffer and its {@link ByteBuffer} view, owned by one benchmark thread. */
  public static final class Buffer {
    final byte[] array;
    final ByteBuffer view;

    /** A buffer of {@code size} bytes. */
    public Buffer(int size) {
      this.array = new byte[size];
      this.view = ByteBuffer.wrap(array);
    }

    /** The bytes last read. */
    public byte[] array() {
      return array;
    }
  }

  /**
   * Reads of the benchmark file through one path; positional reads are thread-safe, {@link #scan}
   * is for one thread. Closes what it opened.
   */
  public interface Reader extends AutoCloseable {
    /** Reads {@code buf.array().length} bytes at {@code pos}. */
    void readFully(long pos, Buffer buf) throws IOException;

    /**
     * Reads the next {@code buf.array().length} bytes of a sequential pass over the file, starting
     * over at offset 0 after its end; returns the file offset the bytes came from.
     */
    long scan(Buffer buf) throws IOException;

    /** The file system the reader uses, or null for {@link #RAW_PREAD}. */
    FileSystem fileSystem();

    @Override
    void close() throws IOException;
  }

  private static final class StreamReader implements Reader {
    private final FileSystem fs;
    private final FSDataInputStream in;
    private long scanPos;

    StreamReader(FileSystem fs, FSDataInputStream in) {
      this.fs = fs;
      this.in = in;
    }

    @Override
    public void readFully(long pos, Buffer buf) throws IOException {
      in.readFully(pos, buf.array, 0, buf.array.length);
    }

    @Override
    public long scan(Buffer buf) throws IOException {
      byte[] b = buf.array;
      int off = 0;
      long start = scanPos;
      while (off < b.length) {
        int n = in.read(b, off, b.length - off);
        if (n < 0) {
          if (off != 0) {
            throw new IOException("file length is not a multiple of the scan buffer");
          }
          in.seek(0);
          start = scanPos = 0;
          continue;
        }
        off += n;
        scanPos += n;
      }
      return start;
    }

    @Override
    public FileSystem fileSystem() {
      return fs;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /** Preads the DataNode's block files directly, mapping file offsets to (block, offset). */
  private static final class RawReader implements Reader {
    private final FileChannel[] channels;
    private final long blockSize;
    private final long length;
    private long scanPos;

    RawReader(MiniDfs dfs, String file) throws IOException {
      DistributedFileSystem fs = dfs.fileSystem();
      List<LocatedBlock> blocks =
          fs.getClient().getLocatedBlocks(file, 0, Long.MAX_VALUE).getLocatedBlocks();
      channels = new FileChannel[blocks.size()];
      blockSize = dfs.blockSize();
      long total = 0;
      for (int i = 0; i < channels.length; i++) {
        File f = dfs.cluster().getBlockFile(0, blocks.get(i).getBlock());
        if (f == null) {
          throw new IOException("no block file for " + blocks.get(i).getBlock());
        }
        channels[i] = FileChannel.open(f.toPath(), StandardOpenOption.READ);
        total += blocks.get(i).getBlockSize();
      }
      length = total;
    }

    @Override
    public void readFully(long pos, Buffer buf) throws IOException {
      ByteBuffer b = buf.view; // one view per thread: the read path must not allocate
      b.clear();
      while (b.hasRemaining()) {
        long at = pos + b.position(); // a read may cross into the next block's file
        int n = channels[(int) (at / blockSize)].read(b, at % blockSize);
        if (n < 0) {
          throw new IOException("block file shorter than expected at " + at);
        }
      }
    }

    @Override
    public long scan(Buffer buf) throws IOException {
      if (scanPos + buf.array.length > length) {
        scanPos = 0;
      }
      long start = scanPos;
      readFully(start, buf);
      scanPos += buf.array.length;
      return start;
    }

    @Override
    public FileSystem fileSystem() {
      return null;
    }

    @Override
    public void close() throws IOException {
      for (FileChannel ch : channels) {
        ch.close();
      }
    }
  }
}
