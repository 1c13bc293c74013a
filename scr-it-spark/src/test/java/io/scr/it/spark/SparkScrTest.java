package io.scr.it.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.input.PortableDataStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Spark jobs ({@code local[2]}) reading files from a MiniDFSCluster whose DataNode runs the scr
 * shim, with scr enabled only through {@code spark.hadoop.*} settings, exactly what a user puts in
 * {@code spark-defaults.conf} or passes with {@code --conf}. No libhadoop is loaded in this JVM, so
 * stock short-circuit reads are impossible and every short-circuit byte is scr's (mode B).
 *
 * <p>Each task opens its file through {@code PortableDataStream.open()}, that is through the
 * executor's own {@code FileSystem} built from the job's Hadoop configuration, checks the bytes
 * (CRC32) and returns the stream's HDFS {@code ReadStatistics}: Spark's {@code inputMetrics} do not
 * tell short-circuit bytes from TCP bytes. scr's own counters for the context are read on the
 * driver with {@link Engine#acquire}, which shares the engine the tasks used (same JVM in local
 * mode).
 *
 * <p>The cluster is a plain {@link MiniDfs}, not the leak-checking extension: Spark keeps JVM-wide
 * threads (its listener bus, Netty's global executor) after {@code stop()} that are not ours.
 */
class SparkScrTest {
  private static final int BLOCK = 1 << 20;
  private static final String DIR = "/spark/in";

  /** Four files, one to three blocks, ends inside and on block and chunk boundaries. */
  private static final int[] SIZES = {BLOCK / 2 + 13, BLOCK, 2 * BLOCK + 4096, 3 * BLOCK - 511};

  private static final int BLOCKS = 1 + 1 + 3 + 3;

  private static final String SCR_FILE_SYSTEM = "io.scr.core.hdfs.ScrFileSystem";
  private static final String SCR_ACCESSOR = "io.scr.core.hdfs.ScrReplicaAccessorBuilder";

  private static MiniDfs dfs;
  private static URI uri;
  private static Map<String, Long> expectedCrcs;
  private static long totalLength;

  @BeforeAll
  static void startCluster() throws IOException {
    dfs = MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.SHIM).start();
    uri = dfs.uri();
    expectedCrcs = new TreeMap<>();
    for (int i = 0; i < SIZES.length; i++) {
      String p = DIR + "/part-" + i + ".bin";
      byte[] data = dfs.writeRandomFile(p, SIZES[i], 100 + i);
      CRC32 crc = new CRC32();
      crc.update(data);
      expectedCrcs.put(new Path(uri.toString() + p).toString(), crc.getValue());
      totalLength += data.length;
    }
  }

  @AfterAll
  static void stopCluster() throws ReflectiveOperationException {
    try {
      Class.forName(SCR_ACCESSOR).getMethod("releaseAll").invoke(null);
    } finally {
      if (dfs != null) {
        dfs.close();
      }
    }
  }

  /** Spark tasks take file systems from the JVM-wide cache, which ignores the configuration. */
  @AfterEach
  void dropCachedFileSystems() throws IOException {
    FileSystem.closeAll();
  }

  @Test
  void scrFileSystemSetThroughSparkHadoopServesEveryByteShortCircuit() throws IOException {
    String context = "spark-fs";
    JobResult result =
        runJob(
            conf ->
                conf.set("spark.hadoop.fs.hdfs.impl", SCR_FILE_SYSTEM)
                    .set("spark.hadoop.scr.client.socket.paths", shimSocketTemplate())
                    .set("spark.hadoop.scr.client.context", context));
    assertEquals(SCR_FILE_SYSTEM, result.fileSystemClass);
    assertEquals(totalLength, result.totalBytes);
    assertEquals(totalLength, result.shortCircuitBytes);
    assertScrCounted(context);
  }

  @Test
  void scrReplicaAccessorSetThroughSparkHadoopShortCircuitsUnderTheStockFileSystem()
      throws IOException {
    String context = "spark-accessor";
    JobResult result =
        runJob(
            conf ->
                conf.set("spark.hadoop.dfs.client.replica.accessor.builder.classes", SCR_ACCESSOR)
                    .set("spark.hadoop.scr.client.socket.paths", shimSocketTemplate())
                    .set("spark.hadoop.scr.client.context", context));
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", result.fileSystemClass);
    assertEquals(totalLength, result.totalBytes);
    assertEquals(totalLength, result.shortCircuitBytes);
    assertScrCounted(context);
  }

  @Test
  void withoutScrSettingsTheSameJobReadsOverTcp() throws IOException {
    // The control: same job, same counters, zero short-circuit bytes without the scr settings.
    JobResult result = runJob(conf -> {});
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", result.fileSystemClass);
    assertEquals(totalLength, result.totalBytes);
    assertEquals(0, result.shortCircuitBytes);
  }

  private static String shimSocketTemplate() {
    return dfs.clientConf().get(MiniDfs.SHIM_SOCKET_PATH_KEY);
  }

  /** scr's own counters for {@code context}: the engine the tasks used served the bytes. */
  private static void assertScrCounted(String context) {
    Configuration conf = new Configuration(false);
    conf.set("scr.client.context", context);
    try (Engine client = Engine.acquire(conf)) {
      ClientSnapshot snapshot = client.metricsSnapshot();
      assertEquals(context, snapshot.context());
      assertTrue(
          snapshot.shortCircuitBytes() >= totalLength,
          "scr counted " + snapshot.shortCircuitBytes() + " bytes in " + snapshot);
      // One replica opened (a cache load) per block of the four files, at least.
      assertTrue(
          client.cacheStats().loadSuccessCount() >= BLOCKS,
          "replica loads: " + client.cacheStats());
      assertEquals(0, snapshot.fallbackTotal(), "fallbacks: " + snapshot.fallbacks());
    }
  }

  /**
   * Runs the CRC job in a new {@code local[2]} context with the cluster's DataNode-facing basics
   * plus {@code settings}, checks every file's CRC and the Hadoop configuration the driver saw.
   */
  private static JobResult runJob(Consumer<SparkConf> settings) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("scr-it-spark")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.ui.enabled", "false")
            // No libhadoop here: stock short-circuit reads stay off, as on a native-free host.
            .set("spark.hadoop.dfs.client.read.shortcircuit", "false");
    settings.accept(conf);
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      // spark.hadoop.* reached the Hadoop configuration, prefix stripped.
      Configuration hadoop = sc.hadoopConfiguration();
      for (scala.Tuple2<String, String> kv : conf.getAll()) {
        if (kv._1().startsWith("spark.hadoop.")) {
          assertEquals(kv._2(), hadoop.get(kv._1().substring("spark.hadoop.".length())), kv._1());
        }
      }
      List<FileRead> reads =
          sc.binaryFiles(uri + DIR, SIZES.length)
              .map(file -> FileRead.of(file._1(), file._2()))
              .collect();
      Map<String, Long> crcs = new TreeMap<>();
      JobResult result = new JobResult();
      List<String> classes = new ArrayList<>();
      for (FileRead r : reads) {
        crcs.put(new Path(r.path).toString(), r.crc);
        result.totalBytes += r.totalBytes;
        result.shortCircuitBytes += r.shortCircuitBytes;
        if (!classes.contains(r.fileSystemClass)) {
          classes.add(r.fileSystemClass);
        }
      }
      assertEquals(expectedCrcs, crcs);
      assertEquals(1, classes.size(), "tasks used " + classes);
      result.fileSystemClass = classes.get(0);
      return result;
    }
  }

  /** What the driver sums over the tasks. */
  private static final class JobResult {
    String fileSystemClass;
    long totalBytes;
    long shortCircuitBytes;
  }

  /** One task's read of one file: its CRC and the stream's HDFS read statistics. */
  static final class FileRead implements Serializable {
    private static final long serialVersionUID = 1L;

    final String path;
    final long crc;
    final String fileSystemClass;
    final long totalBytes;
    final long shortCircuitBytes;

    private FileRead(
        String path, long crc, String fileSystemClass, long totalBytes, long shortCircuitBytes) {
      this.path = path;
      this.crc = crc;
      this.fileSystemClass = fileSystemClass;
      this.totalBytes = totalBytes;
      this.shortCircuitBytes = shortCircuitBytes;
    }

    /** Runs in the task: reads the whole file through the executor's file system. */
    static FileRead of(String path, PortableDataStream stream) throws IOException {
      Path p = new Path(path);
      String fsClass = p.getFileSystem(stream.getConfiguration()).getClass().getName();
      CRC32 crc = new CRC32();
      byte[] buf = new byte[64 * 1024];
      try (DataInputStream in = stream.open()) {
        for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
          crc.update(buf, 0, n);
        }
        if (!(in instanceof HdfsDataInputStream)) {
          throw new IllegalStateException(path + " opened as " + in.getClass().getName());
        }
        ReadStatistics stats = ((HdfsDataInputStream) in).getReadStatistics();
        return new FileRead(
            path,
            crc.getValue(),
            fsClass,
            stats.getTotalBytesRead(),
            stats.getTotalShortCircuitBytesRead());
      }
    }
  }
}
