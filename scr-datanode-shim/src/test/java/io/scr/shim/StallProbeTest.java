package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/** The causes of a slow request, read from this thread's real context switches (Linux). */
@EnabledOnOs(OS.LINUX)
class StallProbeTest {
  private final StallProbe probe = new StallProbe();

  @TempDir Path dir;

  @Test
  void aThreadThatWaitedWithoutReadingStorageWaited() throws Exception {
    probe.start();
    Thread.sleep(10); // as a lock held by another thread: a voluntary switch, no storage read
    assertEquals(StallProbe.Cause.WAITED, probe.slowCause());
  }

  @Test
  void aThreadThatReadFromStorageReadTheDisk() throws Exception {
    ColdFile file = new ColdFile(dir.resolve("cold"), 1 << 20);
    probe.start();
    long fromStorage = file.readCold(); // as a file open on a directory not in the caches
    StallProbe.Cause cause = probe.slowCause();
    assumeTrue(fromStorage > 0, "the test directory's file system reads no device: " + dir);
    assertEquals(StallProbe.Cause.DISK, cause);
  }

  @Test
  void aThreadThatComputedDidNotBlock() {
    // Up to three tries: the JVM may stop this thread at a safepoint that is not a collection (a
    // voluntary switch, rare: WAITED); a collection reads GC, a busy machine's preemption
    // PREEMPTED.
    StallProbe.Cause c = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      probe.start();
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
      while (System.nanoTime() < end) {
        Thread.onSpinWait();
      }
      c = probe.slowCause();
      if (c != StallProbe.Cause.WAITED) {
        break;
      }
    }
    assertTrue(
        EnumSet.of(StallProbe.Cause.RAN, StallProbe.Cause.PREEMPTED, StallProbe.Cause.GC)
            .contains(c),
        "computing for 20 ms is neither a wait nor a read: " + c);
  }

  @Test
  void aCollectionDuringTheRequestIsTheCause() {
    probe.start();
    System.gc(); // a full collection: this thread waits for it, as at a safepoint
    assertEquals(StallProbe.Cause.GC, probe.slowCause());
  }
}
