package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.channels.ClosedByInterruptException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Closing a pool while its refill thread is in a segment fetch (a file system closed while the pool
 * was growing: {@code ./scr demo}'s shutdown) is the end of the pool, not a fetch failure: no WARN,
 * no stack trace, no failure counted. The close interrupts the refill thread, and a real fetch then
 * fails with {@link ClosedByInterruptException}, as this source's does.
 */
@Timeout(60)
class CloseDuringFetchTest {
  /** A source whose fetch blocks until interrupted, then fails as an interrupted channel does. */
  private static final class BlockingSource implements SegmentSource {
    final CountDownLatch fetching = new CountDownLatch(1);

    @Override
    public Segment fetch() throws IOException {
      fetching.countDown();
      try {
        new CountDownLatch(1).await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      throw new ClosedByInterruptException();
    }

    @Override
    public void returnSegment(Segment segment) {
      segment.close();
    }
  }

  @Test
  void aCloseDuringAFetchIsNeitherAWarningNorAFailure() throws Exception {
    BlockingSource source = new BlockingSource();
    PrintStream stderr = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    SlotPool pool =
        SlotPool.newBuilder("dn-closing", source, slots -> {})
            .maxAllocationWait(Duration.ofSeconds(30))
            .build();
    Thread reader =
        new Thread(
            () -> {
              try {
                pool.allocate(); // no segment yet: asks the refill thread and waits
              } catch (IOException | RuntimeException expected) {
                // the close ends the wait
              }
            },
            "allocating-reader");
    reader.start();
    assertTrue(source.fetching.await(30, TimeUnit.SECONDS), "the refill thread is fetching");
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8)); // slf4j-simple's sink
    try {
      pool.close();
      reader.join(30_000);
    } finally {
      System.setErr(stderr);
    }
    assertFalse(reader.isAlive(), "the close ended the waiting allocation");
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN"), "a normal close logged a warning:\n" + log);
    assertFalse(log.contains("ClosedByInterruptException"), "a stack trace at close:\n" + log);
    assertEquals(0, pool.stats().segmentFetchFailures(), pool.stats().toString());
  }

  @Test
  void aSourceThatIsShuttingDownStopsTheRefillQuietly() throws Exception {
    AtomicInteger fetches = new AtomicInteger();
    SegmentSource closing =
        new SegmentSource() {
          @Override
          public Segment fetch() throws IOException {
            fetches.incrementAndGet();
            throw new SlotPoolClosedException("the engine is closing");
          }

          @Override
          public void returnSegment(Segment segment) {
            segment.close();
          }
        };
    FakeTicker ticker = new FakeTicker();
    List<Thread> threads = new CopyOnWriteArrayList<>();
    PrintStream stderr = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    SlotPool pool =
        SlotPool.newBuilder("dn-source-closing", closing, slots -> {})
            .initialFetchBackoff(Duration.ofMillis(100))
            .ticker(ticker)
            .threadFactory(
                r -> {
                  Thread t = new Thread(r);
                  t.setDaemon(true);
                  threads.add(t);
                  return t;
                })
            .build();
    try {
      Thread refill =
          threads.stream().filter(t -> t.getName().endsWith("-refill")).findFirst().orElseThrow();
      // A refill thread that kept going would fetch again once its backoff passed: let it pass,
      // and wake the thread as an allocator that finds the pool low does.
      ticker.advance(1, TimeUnit.HOURS);
      pool.onFreeWordExhausted();
      refill.join(10_000);
      assertFalse(refill.isAlive(), "the refill thread still runs after the source closed");
    } finally {
      pool.close();
      System.setErr(stderr);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertFalse(log.contains("WARN"), "a closing source is not a failure:\n" + log);
    assertEquals(0, pool.stats().segmentFetchFailures(), pool.stats().toString());
    assertEquals(1, fetches.get(), "the refill stopped after the source said it is closing");
  }
}
