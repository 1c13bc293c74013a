package io.scr.it.mapreduce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.FileSystemCounter;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * MapReduce jobs run by the LocalJobRunner over a MiniDFSCluster whose DataNode serves stock
 * short-circuit reads (libhadoop). scr is turned on only through the job's configuration, as a user
 * would in {@code mapred-site.xml} or with {@code -D}; the tasks' HDFS {@code ReadStatistics},
 * surfaced as job counters by {@link ChunkCrcJob}, show who served the bytes. Every job's output (a
 * CRC per chunk) is checked against the written data.
 */
class MapReduceScrTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 3 * BLOCK + 77_777; // four blocks: four map tasks
  private static final Path INPUT = new Path("/mr/input/data.bin");

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static Map<Long, Long> expectedCrcs;
  private static int jobs;

  @BeforeAll
  static void writeInput() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile(INPUT.toString(), LEN, 5);
    expectedCrcs = new TreeMap<>();
    for (int off = 0; off < LEN; off += ChunkCrcJob.CHUNK) {
      CRC32 crc = new CRC32();
      crc.update(data, off, Math.min(ChunkCrcJob.CHUNK, LEN - off));
      expectedCrcs.put((long) off, crc.getValue());
    }
  }

  /**
   * Tasks get their file systems from the JVM-wide cache, which ignores the configuration: a job
   * must start with an empty cache (the input was written through a cached stock client), or its
   * tasks read through whatever client an earlier caller left there.
   */
  @BeforeEach
  @AfterEach
  void dropCachedFileSystems() throws IOException {
    FileSystem.closeAll();
  }

  @AfterAll
  static void releaseAccessorEngines() throws ReflectiveOperationException {
    Class.forName("io.scr.core.hdfs.ScrReplicaAccessorBuilder")
        .getMethod("releaseAll")
        .invoke(null);
  }

  @Test
  void stockBaselineJobShortCircuitsThroughLibhadoop() throws Exception {
    Counters counters = runJob(c -> {});
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.TOTAL_BYTES).getValue());
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.SHORT_CIRCUIT_BYTES).getValue());
  }

  @Test
  void stockJobWithoutShortCircuitReadsOverTcp() throws Exception {
    // The control: the same job and counters report zero when nothing short-circuits.
    Counters counters = runJob(c -> c.setBoolean("dfs.client.read.shortcircuit", false));
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.TOTAL_BYTES).getValue());
    assertEquals(0, counters.findCounter(ChunkCrcJob.ReadStats.SHORT_CIRCUIT_BYTES).getValue());
  }

  @Test
  void scrFileSystemSetInTheJobConfigurationServesEveryByte() throws Exception {
    Counters counters =
        runJob(
            c -> {
              c.set("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
              c.set("scr.client.context", "mr-fs");
              // Stock short-circuit off: a stock stream could not count a short-circuit byte.
              c.setBoolean("dfs.client.read.shortcircuit", false);
            });
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.TOTAL_BYTES).getValue());
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.SHORT_CIRCUIT_BYTES).getValue());
    assertEquals(
        LEN,
        counters.findCounter(ChunkCrcJob.ReadStats.SCR_STREAM_SHORT_CIRCUIT_BYTES).getValue(),
        "the task's streams were scr's own");
  }

  @Test
  void scrReplicaAccessorSetInTheJobConfigurationShortCircuitsWithStockOff() throws Exception {
    Counters counters =
        runJob(
            c -> {
              // Stock short-circuit off: every short-circuit byte counted is scr's.
              c.setBoolean("dfs.client.read.shortcircuit", false);
              c.set(
                  "dfs.client.replica.accessor.builder.classes",
                  "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
              c.set("scr.client.context", "mr-accessor");
            });
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.TOTAL_BYTES).getValue());
    assertEquals(LEN, counters.findCounter(ChunkCrcJob.ReadStats.SHORT_CIRCUIT_BYTES).getValue());
  }

  /**
   * Runs the job with the cluster's client settings plus {@code jobSettings}; checks its output.
   */
  private static Counters runJob(Consumer<Configuration> jobSettings) throws Exception {
    Configuration conf = DFS.dfs().clientConf();
    conf.set("mapreduce.framework.name", "local");
    conf.setInt("mapreduce.client.completion.pollinterval", 20);
    String local =
        Paths.get(System.getProperty("java.io.tmpdir"), "mr").toAbsolutePath().toString();
    conf.set("hadoop.tmp.dir", local);
    conf.set("mapreduce.cluster.local.dir", local + "/local");
    // LocalJobRunner stages jobs on the local file system: under the build's own directory, never
    // at the machine's root (which only root could create, and which would outlive the build).
    conf.set("mapreduce.jobtracker.staging.root.dir", local + "/staging");
    jobSettings.accept(conf);

    jobs++;
    Path output = new Path("/mr/output-" + jobs);
    Job job = ChunkCrcJob.create(conf, INPUT, output);
    assertTrue(job.waitForCompletion(false), "job failed: " + job.getStatus().getFailureInfo());
    Counters counters = job.getCounters();
    // One record per chunk; splits follow the four blocks, whose bounds are chunk-aligned.
    assertEquals(
        expectedCrcs.size(), counters.findCounter(TaskCounter.MAP_INPUT_RECORDS).getValue());
    // HDFS_BYTES_READ counts bytes whoever served them (and LocalJobRunner reports JVM totals),
    // which is why the ReadStats counters exist.
    assertTrue(counters.findCounter("hdfs", FileSystemCounter.BYTES_READ).getValue() >= LEN);
    assertEquals(expectedCrcs, readOutput(output));
    return counters;
  }

  private static Map<Long, Long> readOutput(Path dir) throws IOException {
    FileSystem fs = DFS.dfs().fileSystem();
    Map<Long, Long> crcs = new TreeMap<>();
    for (FileStatus part : fs.listStatus(dir, p -> p.getName().startsWith("part-"))) {
      try (FSDataInputStream in = fs.open(part.getPath());
          BufferedReader r =
              new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          int tab = line.indexOf('\t');
          long offset = Long.parseLong(line.substring(0, tab));
          assertEquals(null, crcs.put(offset, Long.parseLong(line.substring(tab + 1))), line);
        }
      }
    }
    return crcs;
  }
}
