package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.internal.NativeIo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every fd and every mapping scr-shm creates is gone again: /proc/self/fd and maps. */
class FdLeakTest {
  private static final String PREFIX = "scr-leak-test";

  @TempDir Path dir;

  @BeforeAll
  static void warmUp() throws IOException {
    // Load jnr, jffi and junixsocket (they open their own files once) before taking baselines.
    NativeIo.ensureAvailable();
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(64);
        Segment segment = Segment.map(ShmId.random(), fd.fileDescriptor(), 64)) {
      segment.slot(0).makeValid();
    }
    // The deleted-file fallback takes other native and JDK paths; a CI run where this class ran
    // first in its JVM saw one more fd after the first fallback segment than before it.
    Path warm = Files.createTempDirectory("scr-leak-warm");
    try (SharedMemoryFd fd =
            SegmentFactory.newBuilder()
                .useMemfd(false)
                .fallbackDirectory(warm)
                .build()
                .createFd(64);
        Segment segment = Segment.map(ShmId.random(), fd.fileDescriptor(), 64)) {
      segment.slot(0).makeValid();
    } finally {
      Files.delete(warm);
    }
    assertThrows(
        IOException.class,
        () ->
            SegmentFactory.newBuilder()
                .useMemfd(false)
                .fallbackDirectory(warm.resolve("no"))
                .build()
                .createFd(64));
  }

  private static long openFds() throws IOException {
    try (Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
      return fds.count();
    }
  }

  /**
   * Open fds that are this test's: segment fds (memfds named with {@link #PREFIX}, files of the
   * deleted-file fallback in {@code dir}) and anything under {@code dir}. Exact, whatever the rest
   * of the JVM opens or closes meanwhile (a cleaner closing an earlier test's fd made a count of
   * every fd in the process one short once).
   */
  private static long ourFds(Path dir) throws IOException {
    String under = dir.toString();
    long n = 0;
    try (Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        String target;
        try {
          target = Files.readSymbolicLink(fd).toString();
        } catch (IOException gone) {
          continue; // closed meanwhile (or the listing's own directory fd)
        }
        if (target.contains(PREFIX) || target.startsWith(under)) {
          n++;
        }
      }
    }
    return n;
  }

  private static long mappings() throws IOException {
    return Files.readAllLines(Paths.get("/proc/self/maps")).stream()
        .filter(l -> l.contains(PREFIX))
        .count();
  }

  @Test
  void fdsAndMappingsOfSegmentsComeBackToBaseline() throws IOException {
    long baseline = openFds();
    SegmentFactory memfd = SegmentFactory.newBuilder().namePrefix(PREFIX).build();
    SegmentFactory file =
        SegmentFactory.newBuilder()
            .useMemfd(false)
            .fallbackDirectory(dir)
            .namePrefix(PREFIX)
            .build();
    List<Segment> segments = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      for (SegmentFactory factory : List.of(memfd, file)) {
        try (SharedMemoryFd fd = factory.createFd(8192)) {
          segments.add(Segment.map(ShmId.random(), fd.fileDescriptor(), 8192));
        }
      }
    }
    assertEquals(0, ourFds(dir), "fds are closed as soon as the segments are mapped");
    assertTrue(openFds() <= baseline, "no other fd left open either");
    assertEquals(200, mappings(), "each mapping keeps its memory");
    segments.forEach(Segment::close);
    segments.forEach(Segment::close);
    assertEquals(0, mappings());
    for (int i = 0; i < 50; i++) {
      SegmentFactory broken =
          SegmentFactory.newBuilder().useMemfd(false).fallbackDirectory(dir.resolve("no")).build();
      assertThrows(IOException.class, () -> broken.createFd(8192));
    }
    assertEquals(0, ourFds(dir), "failed creations close what they opened");
    assertTrue(openFds() <= baseline, "failed creations close what they opened");
  }

  @Test
  void aPoolLeavesNoFdOrMappingBehind() throws Exception {
    long baseline = openFds();
    SegmentFactory factory = SegmentFactory.newBuilder().namePrefix(PREFIX).build();
    List<Segment> returned = new ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger fetched =
        new java.util.concurrent.atomic.AtomicInteger();
    SegmentSource source =
        new SegmentSource() {
          @Override
          public Segment fetch() throws IOException {
            fetched.incrementAndGet();
            return factory.createSegment(ShmId.random(), 8192);
          }

          @Override
          public synchronized void returnSegment(Segment segment) {
            returned.add(segment);
            segment.close();
          }
        };
    SlotPool pool =
        SlotPool.newBuilder("leak", source, slots -> {})
            .lowWatermark(300)
            .releaseBatchDelay(Duration.ZERO)
            .maxAllocationWait(Duration.ofSeconds(10))
            .build();
    List<Slot> held = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      held.add(pool.allocate());
    }
    pool.segmentDisconnected(held.get(0).segment().id());
    for (int i = 0; i < held.size(); i += 2) {
      pool.release(held.get(i));
    }
    pool.close();
    for (int i = 1; i < held.size(); i += 2) {
      pool.release(held.get(i));
    }
    assertEquals(0, pool.stats().segments());
    synchronized (source) {
      assertEquals(fetched.get(), returned.size(), "every segment returned");
    }
    assertEquals(0, mappings(), "every segment unmapped");
    assertEquals(0, ourFds(dir), "every segment fd closed");
    assertTrue(openFds() <= baseline, "no other fd left open either");
  }
}
