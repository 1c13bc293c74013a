package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.RepeatedTest;

/**
 * Many threads lease, hold, nest, invalidate and fail loads over far more keys than the capacity,
 * with a tight fd budget, then the test checks the cache's promises on every value it ever created.
 */
class LeaseCacheStressTest {
  private static final int THREADS = 8;
  private static final int OPS_PER_THREAD = 30_000;
  private static final int KEYS = 400;
  private static final int CAPACITY = 32;
  private static final int FD_BUDGET = 48; // binds before capacity: 32 x 2 > 48

  @RepeatedTest(3)
  void invariantsHoldUnderContention() throws Exception {
    TestValue.Ledger ledger = new TestValue.Ledger();
    FakeTicker ticker = new FakeTicker();
    LeaseCache<Integer, TestValue> cache =
        LeaseCache.create(
            LeaseCacheConfig.newBuilder()
                .capacity(CAPACITY)
                .fdBudget(FD_BUDGET)
                .stripes(8)
                .ticker(ticker)
                .idleExpiry(Duration.ofSeconds(1))
                .maintenanceInterval(Duration.ofMillis(5))
                .fdBudgetWait(Duration.ofSeconds(5))
                .build());
    AtomicLong loadFailures = new AtomicLong();
    AtomicLong budgetRefusals = new AtomicLong();
    AtomicLong leasesTaken = new AtomicLong();
    AtomicBoolean running = new AtomicBoolean(true);
    ValueLoader<Integer, TestValue> loader =
        k -> {
          if (Math.floorMod(k * 31 + (int) System.nanoTime(), 97) == 0) {
            throw new IOException("injected failure for " + k);
          }
          return ledger.open(k, 1 + (k & 1)); // fd costs 1 and 2
        };
    ExecutorService pool = Executors.newFixedThreadPool(THREADS + 1);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      long seed = t * 7919L;
      workers.add(
          pool.submit(
              () -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                start.await();
                for (int i = 0; i < OPS_PER_THREAD; i++) {
                  int key = skewedKey(rnd);
                  int op = rnd.nextInt(1000);
                  if (op < 5) {
                    cache.invalidate(key);
                  } else if (op < 6) {
                    int mod = 2 + rnd.nextInt(20);
                    cache.invalidateIf(k -> k % mod == 0);
                  } else if (op < 8) {
                    ticker.advance(Duration.ofMillis(300)); // drives expiry
                  } else {
                    try (Lease<TestValue> outer = cache.lease(key, loader)) {
                      holdAndCheck(outer, leasesTaken);
                      if (op < 200) { // nest a second lease, of another key or the same one
                        int other = op < 100 ? skewedKey(rnd) : key;
                        try (Lease<TestValue> inner = cache.lease(other, loader)) {
                          holdAndCheck(inner, leasesTaken);
                          if (op < 20) {
                            inner.value().valid = false; // the DataNode invalidated the slot
                          }
                        }
                      }
                    } catch (FdBudgetExhaustedException e) {
                      budgetRefusals.incrementAndGet();
                    } catch (LeaseLoadException e) {
                      loadFailures.incrementAndGet();
                    } catch (InterruptedIOException e) {
                      Thread.interrupted(); // injected interrupt; carry on
                    }
                  }
                }
                return null;
              }));
    }
    Future<?> observer =
        pool.submit(
            () -> {
              SplittableRandom rnd = new SplittableRandom(42);
              start.await();
              while (running.get()) {
                // Read stats and run maintenance concurrently with the workers.
                LeaseCacheStats s = cache.stats();
                assertTrue(s.openFds() <= FD_BUDGET, "accounted fds " + s.openFds());
                if (rnd.nextInt(4) == 0) {
                  cache.cleanUp();
                }
                Thread.onSpinWait();
              }
              return null;
            });
    start.countDown();
    for (Future<?> w : workers) {
      w.get(60, TimeUnit.SECONDS);
    }
    running.set(false);
    observer.get(10, TimeUnit.SECONDS);

    // Quiet: no lease is open.
    LeaseCacheStats quiet = cache.stats();
    assertEquals(0, quiet.leasedEntryCount(), quiet.toString());
    assertTrue(quiet.entryCount() <= CAPACITY, "size above capacity when quiet: " + quiet);
    assertTrue(quiet.openFds() <= FD_BUDGET, quiet.toString());
    assertTrue(
        ledger.maxOpenFds.get() <= FD_BUDGET,
        "fd budget exceeded: " + ledger.maxOpenFds.get() + " fds open at once");
    assertTrue(quiet.evictionCount() > 0, quiet.toString());
    assertTrue(quiet.invalidationCount() > 0 && loadFailures.get() > 0, quiet.toString());
    assertEquals(ledger.created.get(), quiet.loadSuccessCount(), "one load per value created");

    // Every idle entry expires (or, if a worker cleared its VALID bit, goes as stale) once the
    // ticker passes the idle expiry.
    long expiredBefore =
        quiet.removalCount(RemovalCause.EXPIRED) + quiet.removalCount(RemovalCause.STALE);
    ticker.advance(Duration.ofSeconds(2));
    cache.cleanUp();
    LeaseCacheStats expired = cache.stats();
    assertEquals(0, expired.entryCount(), expired.toString());
    assertEquals(
        quiet.entryCount(),
        expired.removalCount(RemovalCause.EXPIRED)
            + expired.removalCount(RemovalCause.STALE)
            - expiredBefore,
        expired.toString());

    cache.close();
    pool.shutdownNow();
    assertEquals(List.of(), new ArrayList<>(ledger.violations));
    for (TestValue v : ledger.all) {
      assertEquals(1, v.closes.get(), v + " close count");
      assertEquals(0, v.testLeases.get(), v + " test lease count");
    }
    assertEquals(0, ledger.openFds.get());
    assertEquals(0, cache.stats().openFds());
    assertEquals(0, cache.stats().entryCount());
    assertTrue(leasesTaken.get() > THREADS * OPS_PER_THREAD / 2, "leases " + leasesTaken.get());
  }

  /** Half the accesses go to a hot tenth of the keys, the rest spread over all of them. */
  private static int skewedKey(SplittableRandom rnd) {
    return rnd.nextBoolean() ? rnd.nextInt(KEYS / 10) : rnd.nextInt(KEYS);
  }

  private static void holdAndCheck(Lease<TestValue> lease, AtomicLong leasesTaken) {
    TestValue v = lease.value();
    v.testLeases.incrementAndGet();
    leasesTaken.incrementAndGet();
    if (v.isClosed()) {
      v.ledger.violations.add(v + " served after it was closed");
    }
    Thread.onSpinWait();
    v.testLeases.decrementAndGet();
  }
}
