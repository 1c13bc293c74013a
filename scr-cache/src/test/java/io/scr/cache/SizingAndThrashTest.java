package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class SizingAndThrashTest {

  @Test
  void defaultSizingFollowsTheDocumentedFormula() {
    LeaseCacheConfig c = LeaseCacheConfig.newBuilder().build();
    LeaseCacheConfig.Sizing big = c.resolveSizing(1_048_576);
    assertEquals(523_264, big.fdBudget()); // 0.5 x 1048576 - 1024
    assertEquals(261_632, big.capacity()); // / 2 fds per replica
    LeaseCacheConfig.Sizing mid = c.resolveSizing(65_536);
    assertEquals(31_744, mid.fdBudget());
    assertEquals(15_872, mid.capacity());
    LeaseCacheConfig.Sizing small = c.resolveSizing(1024);
    assertEquals(128, small.fdBudget(), "below the reserve: an eighth of the limit");
    assertEquals(64, small.capacity());
    assertTrue(small.reason().contains("RLIMIT_NOFILE soft limit 1024"), small.reason());
    LeaseCacheConfig.Sizing unknown = c.resolveSizing(-1);
    assertEquals(LeaseCacheConfig.FALLBACK_CAPACITY, unknown.capacity());
  }

  @Test
  void explicitSizesAreHonouredButTheBudgetNeverExceedsTheLimit() {
    LeaseCacheConfig.Sizing s =
        LeaseCacheConfig.newBuilder()
            .capacity(60_000)
            .fdBudget(500_000)
            .fdLimit(65_536)
            .build()
            .resolveSizing();
    assertEquals(60_000, s.capacity());
    assertEquals(65_536, s.fdBudget());
    assertEquals(65_536, s.fdLimit());
    assertTrue(s.reason().contains("capped at the fd limit"), s.reason());
  }

  @Test
  void sizesFromTheRealProcessFdLimitWithoutExceedingIt() {
    long limit = LeaseCacheConfig.readSoftFdLimit();
    assertTrue(limit > 0, "Linux JVMs expose UnixOperatingSystemMXBean");
    try (LeaseCache<String, TestValue> cache =
        LeaseCache.create(LeaseCacheConfig.newBuilder().build())) {
      LeaseCacheConfig.Sizing s = cache.sizing();
      assertEquals(limit, s.fdLimit());
      assertTrue(s.fdBudget() <= limit && (long) s.capacity() * 2 <= limit, s.reason());
      assertEquals(s.capacity(), cache.stats().capacity());
    }
  }

  @Test
  void distinctCounterEstimatesWithinTenPercent() {
    DistinctCounter c = new DistinctCounter(10_000);
    for (int round = 0; round < 3; round++) { // repeats must not count twice
      for (int i = 0; i < 50_000; i++) {
        c.offer(Integer.valueOf(i).hashCode());
      }
    }
    long e = c.estimate();
    assertTrue(e > 45_000 && e < 55_000, "estimate " + e);
    c.reset();
    assertEquals(0, c.estimate());
  }

  @Test
  void warnsRateLimitedWhenTheWorkingSetExceedsCapacity() throws IOException {
    FakeTicker ticker = new FakeTicker();
    TestValue.Ledger ledger = new TestValue.Ledger();
    try (LeaseCache<Integer, TestValue> cache =
        LeaseCache.create(
            LeaseCacheConfig.newBuilder()
                .capacity(100)
                .fdBudget(10_000)
                .ticker(ticker)
                .thrashWindow(Duration.ofSeconds(10))
                .thrashWarningInterval(Duration.ofMinutes(5))
                .maintenanceInterval(Duration.ofHours(1))
                .build())) {
      cache.cleanUp(); // opens the first window
      cycle(cache, ledger, 400, 2_000); // working set 400 against capacity 100
      ticker.advance(Duration.ofSeconds(10));
      cache.cleanUp();
      LeaseCacheStats s = cache.stats();
      assertEquals(1, s.thrashWarningCount(), s.toString());
      assertTrue(
          s.recommendedCapacity() >= 400 && s.recommendedCapacity() <= 500,
          "recommended " + s.recommendedCapacity());

      cycle(cache, ledger, 400, 2_000);
      ticker.advance(Duration.ofSeconds(10));
      cache.cleanUp();
      assertEquals(1, cache.stats().thrashWarningCount(), "rate-limited within 5 minutes");

      ticker.advance(Duration.ofMinutes(5));
      cache.cleanUp(); // closes the idle window (no evictions): no thrash
      cycle(cache, ledger, 400, 2_000);
      ticker.advance(Duration.ofSeconds(10));
      cache.cleanUp();
      assertEquals(2, cache.stats().thrashWarningCount());
    }
  }

  @Test
  void staysQuietWhenTheWorkingSetFits() throws IOException {
    FakeTicker ticker = new FakeTicker();
    TestValue.Ledger ledger = new TestValue.Ledger();
    try (LeaseCache<Integer, TestValue> cache =
        LeaseCache.create(
            LeaseCacheConfig.newBuilder()
                .capacity(100)
                .fdBudget(10_000)
                .ticker(ticker)
                .maintenanceInterval(Duration.ofHours(1))
                .build())) {
      cache.cleanUp();
      for (int w = 0; w < 3; w++) {
        cycle(cache, ledger, 90, 2_000);
        ticker.advance(Duration.ofSeconds(10));
        cache.cleanUp();
      }
      assertEquals(0, cache.stats().thrashWarningCount());
      assertEquals(0, cache.stats().evictionCount());
    }
  }

  /** Leases keys 0..keys-1 round-robin, as a scan over a working set would. */
  private static void cycle(
      LeaseCache<Integer, TestValue> cache, TestValue.Ledger ledger, int keys, int leases)
      throws IOException {
    for (int i = 0; i < leases; i++) {
      try (Lease<TestValue> l = cache.lease(i % keys, k -> ledger.open(k, 2))) {
        l.value();
      }
    }
  }
}
