package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.read.MappedReads;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mapped reads through the user's {@code ScrFileSystem}: with {@code
 * scr.client.read.mapped.enabled} positional and stateful reads return the file's bytes, with
 * verification on and off, served from mappings of the block files (which the process then maps); a
 * corrupted block is a checksum failure on the short-circuit path, as without it; with the key off
 * (the default) no block file is mapped.
 */
class ScrMappedReadTest {
  private static final int BLOCK = 256 * 1024;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static ScrFileSystem fileSystem(String context, boolean mapped) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              c.setBoolean("dfs.client.read.shortcircuit", false); // every local byte is scr's
              c.set("scr.client.context", context);
              c.setInt("scr.client.prefetch.max-blocks", 0);
              if (mapped) {
                c.setBoolean("scr.client.read.mapped.enabled", true);
                c.setInt("scr.client.read.mapped.min-reads", 2);
              }
            });
  }

  private static ScrInputStream unwrap(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  /** How many of {@code file}'s block files (not meta files) this process maps now. */
  private static int mappedBlockFiles(ScrFileSystem fs, String file) throws IOException {
    int n = 0;
    for (String line :
        Files.readAllLines(Paths.get("/proc/self/maps"), StandardCharsets.ISO_8859_1)) {
      for (LocatedBlock lb : fs.getClient().getLocatedBlocks(file, 0).getLocatedBlocks()) {
        if (line.endsWith("/blk_" + lb.getBlock().getBlockId())) {
          n++;
        }
      }
    }
    return n;
  }

  /** Random positional and stateful reads of {@code file}, checked against {@code data}. */
  private static void readAndCheck(FSDataInputStream in, byte[] data, Random rnd)
      throws IOException {
    for (int i = 0; i < 300; i++) {
      int off = rnd.nextInt(data.length);
      int len = Math.min(1 + rnd.nextInt(i % 4 == 0 ? 300_000 : 6000), data.length - off);
      byte[] got = new byte[len];
      if (i % 2 == 0) {
        in.readFully(off, got);
      } else {
        in.seek(off);
        int done = 0;
        while (done < len) {
          int n = in.read(got, done, len - done);
          assertTrue(n > 0);
          done += n;
        }
      }
      assertArrayEquals(Arrays.copyOfRange(data, off, off + len), got, "at " + off + " +" + len);
    }
    // One sequential scan, 1 MiB reads.
    in.seek(0);
    byte[] all = new byte[data.length];
    int done = 0;
    while (done < all.length) {
      done += in.read(all, done, Math.min(1 << 20, all.length - done));
    }
    assertArrayEquals(data, all);
  }

  @Test
  void positionalAndStatefulReadsMatchTheFileFromMappingsWithVerificationOnAndOff()
      throws Exception {
    String file = "/mapped/on";
    byte[] data = DFS.dfs().writeRandomFile(file, 3 * BLOCK + 4321, 1);
    for (boolean verify : new boolean[] {true, false}) {
      ScrFileSystem fs = fileSystem("mapped-on-" + verify, true);
      fs.setVerifyChecksum(verify);
      MappedReads policy = fs.engine().mappedReads();
      try (FSDataInputStream in = fs.open(new Path(file))) {
        readAndCheck(in, data, new Random(verify ? 2 : 3));
        assertEquals(0, unwrap(in).counters().fallbacks(), "every read was scr's");
      }
      assertTrue(policy.reads() >= 150, "reads served from mappings: " + policy.reads());
      assertEquals(0, policy.fallbacks());
      assertEquals(4, policy.budget().mappings(), "each of the 4 block files mapped once");
      assertEquals(4, mappedBlockFiles(fs, file), "the process maps the 4 block files");
      assertEquals(policy.reads(), fs.engine().metricsSnapshot().mappedReads());
      assertEquals(4, fs.engine().metricsSnapshot().mappedReadMappings());
      fs.close();
      assertEquals(0, policy.budget().mappings(), "closing the engine gave the mappings back");
    }
  }

  @Test
  void theKeyOffMapsNoBlockFile() throws Exception {
    String file = "/mapped/off";
    byte[] data = DFS.dfs().writeRandomFile(file, 2 * BLOCK + 99, 4);
    ScrFileSystem fs = fileSystem("mapped-off", false);
    assertNull(fs.engine().mappedReads(), "off by default");
    try (FSDataInputStream in = fs.open(new Path(file))) {
      readAndCheck(in, data, new Random(5));
      assertEquals(0, mappedBlockFiles(fs, file), "no block file mapped");
      assertEquals(0, fs.engine().metricsSnapshot().mappedReads());
    }
  }

  @Test
  void aCorruptedBlockIsAChecksumFailureOnTheMappedPathAsOnThePreadPath() throws Exception {
    String file = "/mapped/corrupt";
    DFS.dfs().writeRandomFile(file, BLOCK, 6);
    ScrFileSystem fs = fileSystem("mapped-corrupt", true);
    ExtendedBlock block = fs.getClient().getLocatedBlocks(file, 0).get(0).getBlock();
    MappedReads policy = fs.engine().mappedReads();
    try (FSDataInputStream in = fs.open(new Path(file))) {
      byte[] buf = new byte[4096];
      in.readFully(0, buf);
      in.readFully(8192, buf); // the second read maps the block file
      assertEquals(1, mappedBlockFiles(fs, file));
      long before = policy.reads();
      DFS.dfs().cluster().getMaterializedReplica(0, block).corruptData();
      // The one replica is corrupt: scr's verification fails, then so does stock's.
      assertThrows(IOException.class, () -> in.readFully(0, new byte[BLOCK]));
      assertEquals(
          1, unwrap(in).counters().checksumFallbacks(), "a checksum failure on scr's path");
      assertEquals(before + 1, policy.reads(), "found in the bytes copied from the mapping");
      assertEquals(1, fs.engine().metricsSnapshot().checksumFailures());
    }
  }
}
