package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.ScrClient;
import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.net.FailureClass;
import io.scr.core.net.PathBackoff;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.MiniDfs;
import io.scr.testing.ResourceSnapshot;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Scenario 7: the DataNode cannot create shared memory (its segment directory does not exist; the
 * build runs as root, for whom a read-only directory is still writable). Reads must still
 * short-circuit, with time-based staleness instead of slots, and the reason must show in the
 * engine's backoff status and metrics.
 */
abstract class AbstractNoShmTest {
  /** A directory that does not exist: every segment the DataNode tries to create fails. */
  static final String MISSING_SHM_DIR = "/nonexistent-scr-shm-dir";

  static {
    Faults.warmJvmSingletons();
  }

  abstract MiniDfs dfs();

  @AfterAll
  static void releaseAccessorEngines() {
    ScrReplicaAccessorBuilder.releaseAll();
  }

  @Test
  void readsShortCircuitWithoutSlotsAndSayWhy() throws Exception {
    ResourceSnapshot before = ResourceSnapshot.take();
    int length = 3 * 64 * 1024 + 99;
    byte[] data = dfs().writeRandomFile("/noshm/f", length, 7);
    try (ScrFileSystem fs = Faults.scrFileSystem(dfs(), c -> {})) {
      for (int i = 0; i < 2; i++) {
        try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path("/noshm/f"))) {
          byte[] read = new byte[length];
          in.readFully(0, read);
          assertArrayEquals(data, read);
          assertEquals(
              length,
              in.getReadStatistics().getTotalShortCircuitBytesRead(),
              "reads must short-circuit without shared memory");
        }
      }
      ScrClient scr = fs.scrClient();
      List<PathBackoff.Status> shm =
          scr.backoffStatus().stream()
              .filter(s -> s.failureClass() == FailureClass.SHM)
              .collect(Collectors.toList());
      assertEquals(1, shm.size(), "one SHM backoff with its reason: " + scr.backoffStatus());
      assertTrue(shm.get(0).failures() >= 1, shm.toString());
      assertTrue(!shm.get(0).lastReason().isEmpty(), "the reason must be named: " + shm);
      assertTrue(
          scr.metricsSnapshot().backoff().stream()
              .anyMatch(s -> s.failureClass() == FailureClass.SHM),
          "metrics must show the SHM backoff");
      long slotsInUse = scr.slotPoolStats().stream().mapToLong(SlotPoolStats::slotsInUse).sum();
      assertEquals(0, slotsInUse, "no slots without shared memory: " + scr.slotPoolStats());
      System.out.println("no shm: " + shm.get(0));
    }
    List<String> leaks = Faults.scrLeaks(before, dfs(), Duration.ofSeconds(15));
    assertTrue(leaks.isEmpty(), "left behind: " + leaks);
  }
}
