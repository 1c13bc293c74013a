package io.scr.benchmarks.read;

import io.scr.testing.MiniDfs;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.ClientContext;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitCache;

/**
 * A benchmark's world for one {@link ReadPathType}: a one-DataNode cluster of the path's mode, one
 * file of seeded random bytes, read once through the path before measuring (page cache warm, bytes
 * checked against what was written) and a {@link ReadPathType.Reader} open on it.
 *
 * <p>Owns the cluster, the reader and, for the accessor paths, the scr engines of the accessor: all
 * closed by {@link #close()}. Not thread-safe to set up or close; the reader is as thread-safe as
 * its path.
 */
final class BenchFile implements AutoCloseable {
  final ReadPathType path;
  final MiniDfs dfs;
  final String name;
  final long length;
  final byte[] data;
  final ReadPathType.Reader reader;

  private BenchFile(
      ReadPathType path, MiniDfs dfs, String name, byte[] data, ReadPathType.Reader reader) {
    this.path = path;
    this.dfs = dfs;
    this.name = name;
    this.length = data.length;
    this.data = data;
    this.reader = reader;
  }

  /**
   * Starts a cluster for {@code path}, writes {@code blocks} blocks of {@code blockSize} bytes to
   * {@code name}, opens it with {@code client} settings added and reads all of it once, checking
   * every byte.
   */
  static BenchFile create(
      ReadPathType path,
      String name,
      int blockSize,
      int blocks,
      Consumer<Configuration> cluster,
      Consumer<Configuration> client)
      throws IOException {
    MiniDfs dfs = path.startCluster(blockSize, cluster);
    ReadPathType.Reader reader = null;
    try {
      byte[] data = dfs.writeRandomFile(name, Math.multiplyExact(blockSize, blocks), 11);
      reader = path.open(dfs, name, client);
      BenchFile file = new BenchFile(path, dfs, name, data, reader);
      file.readAllAndCheck(Math.min(blockSize, 1 << 20));
      return file;
    } catch (IOException | RuntimeException e) {
      if (reader != null) {
        reader.close();
      }
      ReadPathType.releaseAccessorEngines();
      dfs.close();
      throw e;
    }
  }

  private void readAllAndCheck(int chunk) throws IOException {
    ReadPathType.Buffer buf = new ReadPathType.Buffer(chunk);
    for (long pos = 0; pos + chunk <= length; pos += chunk) {
      reader.readFully(pos, buf);
      check(pos, buf);
    }
  }

  /**
   * {@code count} uniform random offsets of {@code readSize}-byte reads in this file, seeded, none
   * aligned to a 512-byte checksum chunk (an aligned offset is moved by one byte).
   */
  long[] randomOffsets(int readSize, int seed, int count) {
    SplittableRandom random = new SplittableRandom(seed);
    long[] offsets = new long[count];
    for (int i = 0; i < count; i++) {
      long off = random.nextLong(length - readSize);
      offsets[i] = off % 512 == 0 ? off + 1 : off;
    }
    return offsets;
  }

  /** Throws when {@code buf} does not hold the file's bytes at {@code pos}. */
  void check(long pos, ReadPathType.Buffer buf) {
    byte[] b = buf.array();
    int from = Math.toIntExact(pos);
    if (!java.util.Arrays.equals(b, 0, b.length, data, from, from + b.length)) {
      throw new IllegalStateException(path + " returned wrong bytes in [" + pos + ", +" + b.length);
    }
  }

  /** Throws when the mapped path read nothing from a mapping (its figures would be the pread's). */
  private void requireMappedReads() {
    try (io.scr.core.ScrClient engine =
        io.scr.core.ScrClient.acquire(reader.fileSystem().getConf())) {
      io.scr.core.metrics.ClientSnapshot s = engine.metricsSnapshot();
      if (s.mappedReads() == 0 || s.mappedReadFallbacks() != 0) {
        throw new IllegalStateException(
            path
                + " did not read from mappings only: "
                + s.mappedReads()
                + " mapped reads, "
                + s.mappedReadFallbacks()
                + " fallbacks");
      }
    }
  }

  @Override
  public void close() throws IOException {
    try {
      if (path == ReadPathType.SCR_FILESYSTEM_MAPPED) {
        requireMappedReads();
      }
      reader.close();
    } finally {
      ReadPathType.releaseAccessorEngines();
      dfs.close();
    }
  }

  /** Stock keeps a context's short-circuit caches (and their fds) for the life of the JVM. */
  static void closeStockCaches(DistributedFileSystem fs) {
    ClientContext context = fs.getClient().getClientContext();
    try {
      Field field = ClientContext.class.getDeclaredField("shortCircuitCache");
      field.setAccessible(true);
      for (ShortCircuitCache cache : (ShortCircuitCache[]) field.get(context)) {
        cache.close();
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("ClientContext.shortCircuitCache is not Hadoop 3.4.2's", e);
    }
  }
}
