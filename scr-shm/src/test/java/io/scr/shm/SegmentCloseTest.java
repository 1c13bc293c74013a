package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A closed segment's slots can still be touched by a lagging thread without crashing the JVM: they
 * read as zero, writes go nowhere shared, and the range is unmapped only once nothing references
 * the segment.
 */
class SegmentCloseTest {
  private static final int LENGTH = 8192;

  @Test
  void aClosedSegmentsSlotsReadZeroAndItsWritesStayPrivate() throws IOException {
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(LENGTH);
        Segment creator = Segment.map(ShmId.random(), fd.fileDescriptor(), LENGTH)) {
      Segment user = Segment.map(creator.id(), fd.fileDescriptor(), LENGTH);
      Slot slot = user.slot(3);
      slot.makeValid();
      assertTrue(creator.registerSlot(3, true).isValid(), "shared while open");
      assertTrue(slot.tryAnchor());

      user.close();

      assertTrue(user.isClosed());
      assertEquals(0L, slot.loadVolatile(), "the word reads as zero after close");
      assertFalse(slot.isValid());
      assertFalse(slot.isAnchorable());
      assertFalse(slot.tryAnchor(), "nothing to anchor");
      slot.storeVolatile(Slot.VALID_FLAG);
      assertTrue(slot.compareAndSet(Slot.VALID_FLAG, Slot.VALID_FLAG | 5));
      assertEquals(
          Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG | 1,
          creator.slot(3).loadVolatile(),
          "the creator still sees the word as it was at close; later writes stayed private");
      assertEquals(0L, user.slot(4).loadVolatile());
    }
  }

  @Test
  void readersRacingACloseNeverFault() throws Exception {
    int readers = 4;
    for (int round = 0; round < 200; round++) {
      Segment segment = SegmentFactory.newBuilder().build().createSegment(ShmId.random(), LENGTH);
      for (int i = 0; i < segment.slotCount(); i++) {
        segment.slot(i).makeValid();
      }
      CountDownLatch started = new CountDownLatch(readers);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicBoolean closeReturned = new AtomicBoolean();
      AtomicLong validAfterClose = new AtomicLong();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < readers; t++) {
        Slot slot = segment.slot(t * 31 % segment.slotCount());
        Thread thread =
            new Thread(
                () -> {
                  started.countDown();
                  while (!stop.get()) {
                    boolean afterClose = closeReturned.get();
                    long word = slot.loadVolatile();
                    if (afterClose && word != 0) {
                      validAfterClose.incrementAndGet();
                    }
                    slot.compareAndSet(word, word); // a write after close must not fault either
                  }
                },
                "segment-close-reader-" + t);
        thread.start();
        threads.add(thread);
      }
      started.await();
      segment.close();
      closeReturned.set(true);
      stop.set(true);
      for (Thread thread : threads) {
        thread.join();
      }
      assertEquals(0, validAfterClose.get(), "a read after close saw shared memory");
    }
  }

  @Test
  void theRangeIsUnmappedOnceTheSegmentIsUnreachable() throws Exception {
    Segment segment = SegmentFactory.newBuilder().build().createSegment(ShmId.random(), LENGTH);
    long range = segment.address();
    segment.close();
    assertTrue(mapped(range), "a closed segment keeps its (zero) range while it is reachable");
    WeakReference<Segment> ref = new WeakReference<>(segment);
    segment = null;
    for (int i = 0; i < 200 && mapped(range); i++) {
      System.gc();
      Thread.sleep(50); // the cleaner thread runs after the collection; polled with a bound
    }
    assertTrue(ref.get() == null, "the segment was collected");
    assertFalse(mapped(range), "the cleaner unmapped the range");
  }

  /**
   * Whether any mapping covers {@code address}. Not "a line starts there": the zero pages are an
   * anonymous private mapping, which the kernel may merge with an adjacent one into one area that
   * starts elsewhere.
   */
  private static boolean mapped(long address) throws IOException {
    return Files.readAllLines(Paths.get("/proc/self/maps")).stream()
        .anyMatch(
            l -> {
              int dash = l.indexOf('-');
              int space = l.indexOf(' ');
              long start = Long.parseUnsignedLong(l.substring(0, dash), 16);
              long end = Long.parseUnsignedLong(l.substring(dash + 1, space), 16);
              return Long.compareUnsigned(start, address) <= 0
                  && Long.compareUnsigned(address, end) < 0;
            });
  }
}
