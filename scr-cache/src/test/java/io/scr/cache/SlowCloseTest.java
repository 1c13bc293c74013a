package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A value whose close blocks (a replica on a hung disk or NFS, a munmap stuck behind the kernel)
 * must not block leases: closing happens on the closer thread, outside every stripe lock, so
 * readers of other keys, of the same stripe included, keep leasing, loading and releasing while it
 * hangs.
 */
@Timeout(60)
class SlowCloseTest {
  /** A value whose close waits for {@code release} once {@code stuck} is counted down. */
  static final class Value implements CachedValue {
    final String key;
    final CountDownLatch closing;
    final CountDownLatch release;

    Value(String key, CountDownLatch closing, CountDownLatch release) {
      this.key = key;
      this.closing = closing;
      this.release = release;
    }

    @Override
    public int fdCost() {
      return 1;
    }

    @Override
    public boolean isValid() {
      return true;
    }

    @Override
    public void close() throws IOException {
      if (closing != null) {
        closing.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  @Test
  void aCloseThatHangsBlocksNoLeaseOfAnyKey() throws Exception {
    LeaseCache<String, Value> cache =
        LeaseCache.create(
            LeaseCacheConfig.newBuilder()
                .name("slow-close")
                .capacity(4)
                .fdBudget(1000)
                .stripes(1) // every key in the hanging value's stripe
                .maintenanceInterval(Duration.ofHours(1))
                .build());
    CountDownLatch closing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService reader = Executors.newSingleThreadExecutor();
    try {
      try (Lease<Value> l = cache.lease("hangs", k -> new Value(k, closing, release))) {
        assertEquals("hangs", l.value().key);
      }
      cache.invalidate("hangs");
      assertTrue(closing.await(30, TimeUnit.SECONDS), "the closer started closing the value");
      // The closer is stuck in close(). Another thread leases, loads, hits and evicts (capacity 4,
      // 50 keys) in the same stripe: every one of these completes while the close still hangs.
      Future<Integer> leases =
          reader.submit(
              () -> {
                int done = 0;
                for (int round = 0; round < 3; round++) {
                  for (int i = 0; i < 50; i++) {
                    try (Lease<Value> l = cache.lease("k" + i, k -> new Value(k, null, null))) {
                      assertEquals("k" + i, l.value().key);
                      done++;
                    }
                  }
                }
                return done;
              });
      assertEquals(150, leases.get(30, TimeUnit.SECONDS).intValue());
      assertEquals(1, release.getCount(), "the close was still hanging while every lease ran");
    } finally {
      release.countDown();
      reader.shutdownNow();
      cache.close();
    }
  }
}
