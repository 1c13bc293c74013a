package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.scr.cache.RemovalCause;
import io.scr.core.doctor.Doctor;
import io.scr.core.doctor.DoctorContext;
import io.scr.core.doctor.Finding;
import io.scr.core.hdfs.ScrFileSystem;
import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.internal.engine.Engine;
import io.scr.core.stats.BackoffStatus;
import io.scr.core.stats.FailureClass;
import io.scr.shm.SlotPoolStats;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.RequiresRoot;
import io.scr.testing.ResourceSnapshot;
import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Scenario 7: the DataNode cannot create shared memory because its segment directory is missing,
 * unwritable or full ({@link ShmDir} says how each state is made honestly, also as root). Reads
 * must still short-circuit, with time-based staleness instead of slots; the reason must show in the
 * engine's backoff status and metrics, and {@code scr doctor} must name it with its fix. Without
 * slots, a deleted replica's fds are released once the stale threshold passes.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class AbstractNoShmTest {
  /** The DataNode's segment directory; missing until a test puts it into another state. */
  static final ShmDir SHM_DIR = ShmDir.create("scr-noshm");

  static final int BLOCK = 64 * 1024;

  /** The no-slot staleness the deletion check runs with. */
  static final long STALE_MS = 1000;

  static {
    Faults.warmJvmSingletons();
  }

  abstract MiniDfs dfs();

  /**
   * Makes the DataNodes see the directory's new state: the shim creates each segment when asked
   * (nothing to do); a stock DataNode probes its directories once, at start-up (restart it).
   */
  abstract void dataNodesSeeTheNewState() throws IOException;

  /**
   * What the engine's SHM backoff reason must contain for {@code state} (missing, unwritable,
   * full), or null where the DataNode does not pass the cause on.
   */
  abstract String expectedReason(String state);

  @AfterAll
  static void releaseAccessorEngines() throws IOException {
    ScrReplicaAccessorBuilder.releaseAll();
    SHM_DIR.reset();
  }

  @Test
  @Order(1)
  void missingDirectoryReadsShortCircuitWithoutSlotsAndSayWhy() throws Exception {
    readsShortCircuitWithoutSlotsAndSayWhy("missing");
  }

  @Test
  @Order(2)
  void withoutSlotsADeletedReplicaIsReleasedAfterTheStaleThreshold() throws Exception {
    ResourceSnapshot before = ResourceSnapshot.take();
    int length = 2 * BLOCK;
    byte[] data = dfs().writeRandomFile("/noshm/deleted", length, 8);
    List<File> blockFiles = new ArrayList<>();
    for (LocatedBlock lb :
        dfs().fileSystem().getClient().getLocatedBlocks("/noshm/deleted", 0).getLocatedBlocks()) {
      blockFiles.add(dfs().cluster().getBlockFile(0, lb.getBlock()));
    }
    try (ScrFileSystem fs =
        Faults.scrFileSystem(dfs(), c -> c.setLong("scr.replica.stale.threshold.ms", STALE_MS))) {
      Engine scr = Engine.running(fs.getConf());
      assertArrayEquals(data, Faults.readFully(fs, "/noshm/deleted", length));
      assertEquals(0, slotsInUse(scr), "this check is about replicas without slots");
      long deleteCalled = System.nanoTime();
      assertTrue(dfs().fileSystem().delete(new Path("/noshm/deleted"), false));
      Faults.await(
          "the DataNode to delete the block files",
          Duration.ofSeconds(30),
          () -> blockFiles.stream().noneMatch(File::exists));
      // The bound: the stale threshold, then one maintenance sweep (1 s) retires the idle replica;
      // idle expiry (300 s by default) plays no part.
      long deleted = System.nanoTime();
      Faults.await(
          "no open fd to a deleted block file",
          Duration.ofMillis(STALE_MS + 4000),
          () -> blockFiles.stream().allMatch(f -> Faults.openFdsMatching(f.getName()).isEmpty()));
      assertTrue(
          scr.cacheStats().removalCount(RemovalCause.STALE) > 0, scr.cacheStats().toString());
      System.out.printf(
          "no shm: deleted replica's fds released %d ms after the delete, %d ms after the files"
              + " went%n",
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deleteCalled),
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deleted));
    }
    List<String> leaks = Faults.scrLeaks(before, dfs(), Duration.ofSeconds(15));
    assertTrue(leaks.isEmpty(), "left behind: " + leaks);
  }

  @Test
  @Order(3)
  void unwritableDirectoryReadsShortCircuitWithoutSlotsAndSayWhy() throws Exception {
    String unavailable = ShmDir.unavailableReason("unwritable");
    assumeTrue(unavailable == null, unavailable);
    SHM_DIR.makeUnwritable();
    dataNodesSeeTheNewState();
    readsShortCircuitWithoutSlotsAndSayWhy("unwritable");
  }

  @Test
  @Order(4)
  @RequiresRoot("mounts a full tmpfs over the segment directory")
  void fullDirectoryReadsShortCircuitWithoutSlotsAndSayWhy() throws Exception {
    String unavailable = ShmDir.unavailableReason("full");
    assumeTrue(unavailable == null, unavailable);
    SHM_DIR.makeFull();
    dataNodesSeeTheNewState();
    readsShortCircuitWithoutSlotsAndSayWhy("full");
  }

  private static long slotsInUse(Engine scr) {
    return scr.slotPoolStats().stream().mapToLong(SlotPoolStats::slotsInUse).sum();
  }

  private void readsShortCircuitWithoutSlotsAndSayWhy(String state) throws Exception {
    ResourceSnapshot before = ResourceSnapshot.take();
    int length = 3 * BLOCK + 99;
    String file = "/noshm/" + state;
    byte[] data = dfs().writeRandomFile(file, length, state.hashCode());
    try (ScrFileSystem fs = Faults.scrFileSystem(dfs(), c -> {})) {
      for (int i = 0; i < 2; i++) {
        try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path(file))) {
          byte[] read = new byte[length];
          in.readFully(0, read);
          assertArrayEquals(data, read);
          assertEquals(
              length,
              in.getReadStatistics().getTotalShortCircuitBytesRead(),
              "reads must short-circuit without shared memory (" + state + ")");
        }
      }
      Engine scr = Engine.running(fs.getConf());
      List<BackoffStatus> shm =
          scr.backoffStatus().stream()
              .filter(s -> s.failureClass() == FailureClass.SHM)
              .collect(Collectors.toList());
      assertEquals(1, shm.size(), "one SHM backoff with its reason: " + scr.backoffStatus());
      if ("missing".equals(state)) {
        // The slot pool retries a failed fetch after 100 ms, 200 ms, ...: during the SHM backoff
        // (60 s) it must not ask the DataNode again.
        TimeUnit.MILLISECONDS.sleep(800); // three retries' worth; asserting that none happened
        shm =
            scr.backoffStatus().stream()
                .filter(s -> s.failureClass() == FailureClass.SHM)
                .collect(Collectors.toList());
        assertEquals(1, shm.get(0).failures(), "one segment request per SHM backoff: " + shm);
      }
      assertTrue(shm.get(0).failures() >= 1, shm.toString());
      String reason = shm.get(0).lastReason();
      assertTrue(!reason.isEmpty(), "the reason must be named: " + shm);
      String expected = expectedReason(state);
      if (expected != null) {
        assertTrue(
            reason.contains(expected), state + ": the reason must say " + expected + ": " + reason);
      }
      assertTrue(
          scr.metricsSnapshot().backoff().stream()
              .anyMatch(s -> s.failureClass() == FailureClass.SHM && s.lastReason().equals(reason)),
          "metrics must show the SHM backoff and its reason");
      assertEquals(0, slotsInUse(scr), "no slots without shared memory: " + scr.slotPoolStats());
      System.out.println("no shm (" + state + "): " + shm.get(0));
    }
    Finding doctor = doctorProtocolFinding();
    assertEquals(Finding.Status.WARN, doctor.status(), doctor.toString());
    assertTrue(doctor.finding().contains("refused a shared-memory segment"), doctor.finding());
    String expected = expectedReason(state);
    if (expected != null) {
      assertTrue(doctor.finding().contains(expected), doctor.finding());
    }
    assertTrue(
        doctor
            .fix()
            .contains(
                dfs().mode() == DataNodeMode.SHIM
                    ? "scr.shim.shm"
                    : "dfs.datanode.shared.file.descriptor.paths"),
        doctor.fix());
    System.out.println("doctor (" + state + "): " + doctor);
    List<String> leaks = Faults.scrLeaks(before, dfs(), Duration.ofSeconds(15));
    assertTrue(leaks.isEmpty(), "left behind: " + leaks);
  }

  /** What {@code scr doctor} says about the DataNode's socket (its op-89 probe). */
  private Finding doctorProtocolFinding() {
    Configuration c = dfs().clientConf();
    Faults.scrSettings(dfs(), c);
    List<Finding> findings =
        Doctor.run(
            DoctorContext.newBuilder(c).contactCluster(false).build(), Doctor.defaultChecks());
    List<Finding> protocol =
        findings.stream().filter(f -> f.checkId().equals("protocol")).collect(Collectors.toList());
    assertEquals(1, protocol.size(), "one DataNode socket: " + findings);
    return protocol.get(0);
  }
}
