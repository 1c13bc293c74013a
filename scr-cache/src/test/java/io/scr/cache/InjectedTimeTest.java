package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The cache's time is its {@link Ticker} and its background work runs on its {@link Scheduler}:
 * with a fake ticker and a scheduler that runs tasks only when told to, expiry, maintenance,
 * closing, load times and the fd budget's wait are all deterministic, and no test sleeps.
 */
@Timeout(60)
class InjectedTimeTest {
  private final FakeTicker ticker = new FakeTicker();
  private final ManualScheduler scheduler = new ManualScheduler(ticker);
  private final TestValue.Ledger ledger = new TestValue.Ledger();
  private LeaseCache<String, TestValue> cache;

  private LeaseCacheConfig.Builder config() {
    return LeaseCacheConfig.newBuilder()
        .name("injected-time")
        .capacity(100)
        .fdBudget(1000)
        .stripes(1)
        .ticker(ticker)
        .scheduler(scheduler)
        .idleExpiry(Duration.ofMinutes(1))
        .maintenanceInterval(Duration.ofSeconds(1));
  }

  @AfterEach
  void tearDown() {
    if (cache != null) {
      cache.close();
    }
  }

  @Test
  void maintenanceAndClosingRunOnTheSchedulerAtTickerTime() throws Exception {
    cache = LeaseCache.create(config().build());
    TestValue a;
    try (Lease<TestValue> l = cache.lease("a", k -> ledger.open(k, 2))) {
      a = l.value();
    }
    assertEquals(0, scheduler.runDue(), "nothing is due before the maintenance interval");
    ticker.advance(Duration.ofSeconds(61));
    assertEquals(0, cache.stats().expiryCount(), "no maintenance ran behind the test's back");

    // The maintenance pass expires "a" and submits its close; both run here, on this thread.
    assertEquals(2, scheduler.runDue());
    assertEquals(1, cache.stats().expiryCount());
    assertTrue(a.isClosed(), "closed by the close task");
    assertEquals(0, cache.stats().openFds());
    assertEquals(1, scheduler.pending(), "the next maintenance run is scheduled");

    cache.close();
    assertEquals(0, scheduler.pending(), "close cancels the next maintenance run");
  }

  @Test
  void loadTimesAreTickerTime() throws Exception {
    cache = LeaseCache.create(config().build());
    try (Lease<TestValue> l =
        cache.lease(
            "slow",
            k -> {
              ticker.advance(Duration.ofMillis(7));
              return ledger.open(k, 2);
            })) {
      assertEquals("slow", l.value().key);
    }
    assertEquals(TimeUnit.MILLISECONDS.toNanos(7), cache.stats().maxLoadTimeNanos());
    assertEquals(TimeUnit.MILLISECONDS.toNanos(7), cache.stats().totalLoadTimeNanos());
  }

  @Test
  void theFdBudgetWaitEndsByTheTicker() throws Exception {
    // Budget for one value; its close never runs (nobody runs the scheduler's tasks), so a second
    // load evicts it and then waits for fds that are never freed, for an hour of ticker time.
    cache = LeaseCache.create(config().fdBudget(2).fdBudgetWait(Duration.ofHours(1)).build());
    try (Lease<TestValue> l = cache.lease("a", k -> ledger.open(k, 2))) {
      assertEquals("a", l.value().key);
    }
    ExecutorService loader = Executors.newSingleThreadExecutor();
    try {
      Future<?> second =
          loader.submit(
              () -> {
                try (Lease<TestValue> l = cache.lease("b", k -> ledger.open(k, 2))) {
                  return l.value();
                }
              });
      // Move time until the load gives up (it may not have started its wait at the first move).
      while (true) {
        ticker.advance(Duration.ofHours(2));
        try {
          second.get(10, TimeUnit.MILLISECONDS);
          break;
        } catch (TimeoutException stillWaiting) {
          // advance again
        } catch (ExecutionException e) {
          assertTrue(e.getCause() instanceof FdBudgetExhaustedException, e.toString());
          break;
        }
      }
      assertThrows(ExecutionException.class, second::get, "the load gave up");
      assertEquals(1, ledger.created.get(), "the loader is not called without budget");
    } finally {
      loader.shutdownNow();
    }
  }
}
