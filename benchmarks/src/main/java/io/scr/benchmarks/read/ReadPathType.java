package io.scr.benchmarks.read;

import io.scr.testing.MiniDfs;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
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
 * The competitors of the pread benchmark, one adapter each, opened on the same {@link MiniDfs}
 * (STOCK_SCR mode, so stock short-circuit reads run in the same JVM) and the same file.
 */
public enum ReadPathType {
  /** A raw {@link FileChannel} pread of the block file itself: the physical limit, no checksums. */
  RAW_PREAD {
    @Override
    Reader open(MiniDfs dfs, String file) throws IOException {
      return new RawReader(dfs, file);
    }
  },
  /** Stock short-circuit reads, default 1 MiB {@code dfs.client.read.shortcircuit.buffer.size}. */
  STOCK_SCR_DEFAULT(c -> {}),
  /** Stock short-circuit reads with the 128 KiB buffer HBase deployments set. */
  STOCK_SCR_HBASE(c -> c.setInt("dfs.client.read.shortcircuit.buffer.size", 131072)),
  /** Stock short-circuit reads with a 16 KiB buffer (tuned for small preads). */
  STOCK_SCR_TUNED(c -> c.setInt("dfs.client.read.shortcircuit.buffer.size", 16384)),
  /** Stock client over TCP to the local DataNode. */
  STOCK_TCP(c -> c.setBoolean("dfs.client.read.shortcircuit", false)),
  /** Stock {@code DistributedFileSystem} with the scr replica accessor (integration point 1). */
  SCR_ACCESSOR(
      c -> {
        c.set(
            "dfs.client.replica.accessor.builder.classes",
            "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
        c.setBoolean("dfs.client.read.shortcircuit", false);
      }),
  /** {@code io.scr.core.hdfs.ScrFileSystem} (integration point 2). */
  SCR_FILESYSTEM(c -> c.set("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem"));

  private final Consumer<Configuration> client;

  ReadPathType() {
    this.client = null;
  }

  ReadPathType(Consumer<Configuration> client) {
    this.client = client;
  }

  /** Opens {@code file} for positional reads through this path. */
  Reader open(MiniDfs dfs, String file) throws IOException {
    FileSystem fs = dfs.newFileSystem(client);
    return new StreamReader(fs.open(new Path(file)));
  }

  /** Positional reads of the benchmark file; closes what it opened. */
  interface Reader extends AutoCloseable {
    /** Reads {@code buf.length} bytes at {@code pos}. */
    void readFully(long pos, byte[] buf) throws IOException;

    @Override
    void close() throws IOException;
  }

  private static final class StreamReader implements Reader {
    private final FSDataInputStream in;

    StreamReader(FSDataInputStream in) {
      this.in = in;
    }

    @Override
    public void readFully(long pos, byte[] buf) throws IOException {
      in.readFully(pos, buf, 0, buf.length);
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
    private final ByteBuffer[] wrapped = new ByteBuffer[1];
    private byte[] wrappedArray;

    RawReader(MiniDfs dfs, String file) throws IOException {
      DistributedFileSystem fs = dfs.fileSystem();
      List<LocatedBlock> blocks =
          fs.getClient().getLocatedBlocks(file, 0, Long.MAX_VALUE).getLocatedBlocks();
      channels = new FileChannel[blocks.size()];
      blockSize = dfs.blockSize();
      for (int i = 0; i < channels.length; i++) {
        File f = dfs.cluster().getBlockFile(0, blocks.get(i).getBlock());
        if (f == null) {
          throw new IOException("no block file for " + blocks.get(i).getBlock());
        }
        channels[i] = FileChannel.open(f.toPath(), StandardOpenOption.READ);
      }
    }

    @Override
    public void readFully(long pos, byte[] buf) throws IOException {
      if (wrappedArray != buf) { // wrap once per buffer: the hit path must not allocate
        wrappedArray = buf;
        wrapped[0] = ByteBuffer.wrap(buf);
      }
      ByteBuffer b = wrapped[0];
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
    public void close() throws IOException {
      for (FileChannel ch : channels) {
        ch.close();
      }
    }
  }

  static void closeQuietly(Reader reader) {
    try {
      reader.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
