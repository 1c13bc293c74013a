package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An {@code Error} thrown while the closer thread closes a value (an {@code OutOfMemoryError}, an
 * {@code InternalError} from a native close) must not stop the closer: later values are still
 * closed on it, not on the readers' threads, and the fd budget forgets the failed value's fds.
 */
@Timeout(60)
class CloserFailureTest {
  private LeaseCache<String, Value> cache;

  /** A value that records which thread closed it, and can be told to throw an Error instead. */
  static final class Value implements CachedValue {
    final String key;
    final Error onClose;
    final BlockingQueue<String> closedOn;

    Value(String key, Error onClose, BlockingQueue<String> closedOn) {
      this.key = key;
      this.onClose = onClose;
      this.closedOn = closedOn;
    }

    @Override
    public int fdCost() {
      return 2;
    }

    @Override
    public boolean isValid() {
      return true;
    }

    @Override
    public void close() throws IOException {
      closedOn.add(key + "@" + Thread.currentThread().getName());
      if (onClose != null) {
        throw onClose;
      }
    }
  }

  @AfterEach
  void tearDown() {
    if (cache != null) {
      cache.close();
    }
  }

  @Test
  void anErrorFromAValuesCloseDoesNotStopTheCloser() throws Exception {
    cache =
        LeaseCache.create(
            LeaseCacheConfig.newBuilder()
                .name("closer-test")
                .capacity(100)
                .fdBudget(1000)
                .stripes(1)
                .maintenanceInterval(Duration.ofHours(1))
                .build());
    BlockingQueue<String> closedOn = new LinkedBlockingQueue<>();
    try (Lease<Value> l =
        cache.lease("bad", k -> new Value(k, new OutOfMemoryError("injected"), closedOn))) {
      assertEquals("bad", l.value().key);
    }
    try (Lease<Value> l = cache.lease("good", k -> new Value(k, null, closedOn))) {
      assertEquals("good", l.value().key);
    }

    cache.invalidate("bad");
    assertEquals("bad@closer-test-closer", closedOn.poll(10, TimeUnit.SECONDS));
    cache.invalidate("good");

    assertEquals(
        "good@closer-test-closer",
        closedOn.poll(10, TimeUnit.SECONDS),
        "closed on the closer thread, which outlived the Error");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (cache.stats().openFds() != 0) {
      assertTrue(System.nanoTime() < deadline, "fds still counted: " + cache.stats().openFds());
      Thread.onSpinWait();
    }
  }
}
