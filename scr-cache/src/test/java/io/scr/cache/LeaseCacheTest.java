package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LeaseCacheTest {
  private final FakeTicker ticker = new FakeTicker();
  private final TestValue.Ledger ledger = new TestValue.Ledger();
  private final AtomicInteger loaderCalls = new AtomicInteger();
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private LeaseCache<String, TestValue> cache;

  private LeaseCacheConfig.Builder config() {
    return LeaseCacheConfig.newBuilder()
        .ticker(ticker)
        .capacity(100)
        .fdBudget(1000)
        .stripes(1)
        .maintenanceInterval(Duration.ofHours(1)); // tests drive cleanUp() themselves
  }

  private LeaseCache<String, TestValue> create(LeaseCacheConfig.Builder b) {
    cache = LeaseCache.create(b.build());
    return cache;
  }

  private TestValue load(String key) {
    loaderCalls.incrementAndGet();
    return ledger.open(key, 2);
  }

  private TestValue leaseAndRelease(String key) throws IOException {
    try (Lease<TestValue> l = cache.lease(key, this::load)) {
      return l.value();
    }
  }

  @AfterEach
  void tearDown() {
    if (cache != null) {
      cache.close();
    }
    pool.shutdownNow();
    assertEquals(List.of(), new ArrayList<>(ledger.violations));
  }

  @Test
  void hitServesTheCachedValueWithoutLoading() throws IOException {
    create(config());
    TestValue first = leaseAndRelease("a");
    TestValue second = leaseAndRelease("a");
    assertSame(first, second);
    assertEquals(1, loaderCalls.get());
    LeaseCacheStats s = cache.stats();
    assertEquals(1, s.hitCount());
    assertEquals(1, s.missCount());
    assertEquals(1, s.loadSuccessCount());
    assertEquals(1, s.entryCount());
    assertEquals(0, s.leasedEntryCount());
    assertEquals(2, s.openFds());
  }

  @Test
  void leaseCloseIsIdempotentAndValueAfterCloseThrows() throws Exception {
    create(config());
    Lease<TestValue> l = cache.lease("a", this::load);
    Lease<TestValue> other = cache.lease("a", this::load);
    assertEquals(1, cache.stats().leasedEntryCount());
    l.close();
    l.close(); // a second close must not return the other lease's reference
    assertThrows(IllegalStateException.class, l::value);
    cache.invalidate("a");
    TestValue v = other.value();
    assertFalse(v.isClosed(), "still leased by the other lease");
    other.close();
    assertDoesCloseSoon(v);
  }

  @Test
  void concurrentLeasesOfOneKeyShareOneLoad() throws Exception {
    create(config());
    CountDownLatch loaderStarted = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    ValueLoader<String, TestValue> slow =
        k -> {
          loaderStarted.countDown();
          try {
            proceed.await();
          } catch (InterruptedException e) {
            throw new InterruptedIOException();
          }
          return load(k);
        };
    int n = 8;
    List<Future<TestValue>> results = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      results.add(
          pool.submit(
              () -> {
                try (Lease<TestValue> l = cache.lease("k", slow)) {
                  return l.value();
                }
              }));
    }
    assertTrue(loaderStarted.await(10, TimeUnit.SECONDS));
    // Every lease has missed (found the loading entry) before the load may finish.
    awaitCondition(() -> cache.stats().missCount() == n);
    proceed.countDown();
    TestValue v = results.get(0).get(10, TimeUnit.SECONDS);
    for (Future<TestValue> f : results) {
      assertSame(v, f.get(10, TimeUnit.SECONDS));
    }
    assertEquals(1, loaderCalls.get());
    assertEquals(1, cache.stats().loadSuccessCount());
  }

  @Test
  void failedLoadReachesEveryWaiterAndIsNotCached() throws Exception {
    create(config());
    CountDownLatch loaderStarted = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    IOException boom = new IOException("datanode said no");
    ValueLoader<String, TestValue> failing =
        k -> {
          loaderCalls.incrementAndGet();
          loaderStarted.countDown();
          try {
            proceed.await();
          } catch (InterruptedException e) {
            throw new InterruptedIOException();
          }
          throw boom;
        };
    int n = 4;
    List<Future<?>> results = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      results.add(
          pool.submit(
              () -> {
                cache.lease("k", failing).close();
                return null;
              }));
    }
    assertTrue(loaderStarted.await(10, TimeUnit.SECONDS));
    // Every other caller waits on that one load (a miss is counted before the caller joins it:
    // one that had only counted its miss when the load failed would start a load of its own).
    awaitCondition(() -> threadsWaitingForALoad() == n - 1);
    proceed.countDown();
    for (Future<?> f : results) {
      Exception e = assertThrows(Exception.class, () -> f.get(10, TimeUnit.SECONDS));
      LeaseLoadException lle = assertInstanceOf(LeaseLoadException.class, e.getCause());
      assertSame(boom, lle.getCause());
    }
    assertEquals(1, loaderCalls.get());
    assertEquals(1, cache.stats().loadFailureCount());
    assertEquals(0, cache.stats().entryCount());
    assertEquals(0, cache.stats().openFds(), "the failed load's fd reservation is returned");
    leaseAndRelease("k");
    assertEquals(2, loaderCalls.get(), "a failure is not cached");
  }

  /** Threads parked in the cache waiting for another caller's load of the same key. */
  private static long threadsWaitingForALoad() {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> e.getKey().getState() == Thread.State.WAITING)
        .filter(
            e ->
                java.util.Arrays.stream(e.getValue())
                    .anyMatch(
                        f ->
                            f.getMethodName().equals("awaitLoad")
                                && f.getClassName().equals(StripedLeaseCache.class.getName())))
        .count();
  }

  @Test
  void runtimeExceptionAndNullFromLoaderAreTypedFailures() {
    create(config());
    LeaseLoadException e1 =
        assertThrows(
            LeaseLoadException.class,
            () ->
                cache.lease(
                    "a",
                    k -> {
                      throw new IllegalArgumentException("bad");
                    }));
    assertInstanceOf(IllegalArgumentException.class, e1.getCause());
    LeaseLoadException e2 =
        assertThrows(LeaseLoadException.class, () -> cache.lease("a", k -> null));
    assertInstanceOf(NullPointerException.class, e2.getCause());
    assertEquals(0, cache.stats().entryCount());
    assertEquals(0, cache.stats().openFds());
  }

  @Test
  void sneakyCheckedExceptionFromLoaderDoesNotStrandTheKey() throws IOException {
    create(config());
    LeaseLoadException e =
        assertThrows(
            LeaseLoadException.class,
            () -> cache.lease("a", k -> LeaseCacheTest.<TestValue>sneakyThrow(new Exception("x"))));
    assertEquals("x", e.getCause().getMessage());
    leaseAndRelease("a"); // the key is not stuck in the loading state
    assertEquals(1, cache.stats().entryCount());
  }

  @SuppressWarnings("unchecked")
  private static <T> T sneakyThrow(Throwable t) {
    return LeaseCacheTest.<T, RuntimeException>sneak(t);
  }

  @SuppressWarnings("unchecked")
  private static <T, E extends Throwable> T sneak(Throwable t) throws E {
    throw (E) t;
  }

  @Test
  void interruptedWaiterLeavesTheCacheIntact() throws Exception {
    create(config());
    CountDownLatch loaderStarted = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    ValueLoader<String, TestValue> slow =
        k -> {
          loaderStarted.countDown();
          try {
            proceed.await();
          } catch (InterruptedException e) {
            throw new InterruptedIOException();
          }
          return load(k);
        };
    Future<TestValue> loaderThread =
        pool.submit(
            () -> {
              try (Lease<TestValue> l = cache.lease("k", slow)) {
                return l.value();
              }
            });
    assertTrue(loaderStarted.await(10, TimeUnit.SECONDS));
    CountDownLatch waiterDone = new CountDownLatch(1);
    AtomicInteger outcome = new AtomicInteger();
    Thread waiter =
        new Thread(
            () -> {
              try {
                cache.lease("k", slow).close();
                outcome.set(1);
              } catch (InterruptedIOException e) {
                outcome.set(Thread.currentThread().isInterrupted() ? 2 : 3);
              } catch (IOException e) {
                outcome.set(4);
              }
              waiterDone.countDown();
            });
    waiter.start();
    awaitCondition(() -> cache.stats().missCount() == 2);
    awaitCondition(() -> waiter.getState() == Thread.State.WAITING);
    waiter.interrupt();
    assertTrue(waiterDone.await(10, TimeUnit.SECONDS));
    assertEquals(2, outcome.get(), "InterruptedIOException with the interrupt status kept");
    proceed.countDown();
    TestValue v = loaderThread.get(10, TimeUnit.SECONDS);
    assertSame(v, leaseAndRelease("k"));
    assertEquals(1, loaderCalls.get());
    assertEquals(0, cache.stats().leasedEntryCount());
  }

  @Test
  void idleEntriesExpireOnTheTickerButLeasedOnesDoNot() throws Exception {
    create(config().idleExpiry(Duration.ofMinutes(5)));
    TestValue idle = leaseAndRelease("idle");
    Lease<TestValue> held = cache.lease("held", this::load);
    ticker.advance(Duration.ofMinutes(4));
    cache.cleanUp();
    assertEquals(2, cache.stats().entryCount());
    assertEquals(0, cache.stats().expiryCount());
    assertSame(idle, leaseAndRelease("idle"), "a lease restarts the idle clock");
    ticker.advance(Duration.ofMinutes(4));
    cache.cleanUp();
    assertEquals(0, cache.stats().expiryCount(), "idle for 4 min since its last release");
    ticker.advance(Duration.ofMinutes(1));
    cache.cleanUp();
    assertEquals(1, cache.stats().expiryCount());
    idle.awaitClosed();
    assertEquals(1, cache.stats().entryCount(), "the leased entry stays");
    assertFalse(held.value().isClosed());
    TestValue heldValue = held.value();
    held.close();
    ticker.advance(Duration.ofMinutes(5));
    cache.cleanUp();
    heldValue.awaitClosed();
    assertEquals(0, cache.stats().entryCount());
    // The closer returns the fds to the account right after close() returns: awaitClosed can
    // see the close a moment before the account does (failed once on a loaded machine).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (cache.stats().openFds() != 0 && System.nanoTime() - deadline < 0) {
      Thread.onSpinWait();
    }
    assertEquals(0, cache.stats().openFds());
  }

  @Test
  void evictsTheLeastRecentlyReleasedIdleEntry() throws Exception {
    create(config().capacity(3));
    TestValue a = leaseAndRelease("a");
    TestValue b = leaseAndRelease("b");
    leaseAndRelease("c");
    // Recency has the resolution of the cache's clock, which maintenance advances.
    ticker.advance(Duration.ofSeconds(1));
    cache.cleanUp();
    leaseAndRelease("a"); // a is now the most recently released
    leaseAndRelease("d");
    b.awaitClosed();
    assertFalse(a.isClosed());
    assertEquals(3, cache.stats().entryCount());
    assertEquals(1, cache.stats().removalCount(RemovalCause.SIZE));
  }

  @Test
  void repeatedReleasesWithinOneTickKeepTheirFirstPosition() throws Exception {
    create(config().capacity(3));
    TestValue a = leaseAndRelease("a");
    leaseAndRelease("b");
    leaseAndRelease("c");
    leaseAndRelease("a"); // same tick: not re-recorded, a stays eldest
    leaseAndRelease("d");
    a.awaitClosed();
    assertEquals(3, cache.stats().entryCount());
  }

  @Test
  void onlyIdleEntriesAreEvicted() throws Exception {
    create(config().capacity(2));
    List<Lease<TestValue>> leases = new ArrayList<>();
    for (String k : new String[] {"a", "b", "c", "d"}) {
      leases.add(cache.lease(k, this::load));
    }
    assertEquals(4, cache.stats().entryCount(), "leased entries may exceed capacity");
    assertEquals(0, cache.stats().evictionCount());
    for (Lease<TestValue> l : leases) {
      assertFalse(l.value().isClosed());
    }
    TestValue c = leases.get(2).value();
    leases.get(2).close();
    c.awaitClosed(); // the first to go idle above capacity is evicted at once
    for (Lease<TestValue> l : leases) {
      l.close();
    }
    assertTrue(cache.stats().entryCount() <= 2);
    assertEquals(2, cache.stats().evictionCount());
  }

  @Test
  void invalidateWhileLeasedClosesAfterTheLastLease() throws Exception {
    create(config());
    Lease<TestValue> l = cache.lease("a", this::load);
    TestValue old = l.value();
    cache.invalidate("a");
    TestValue fresh = leaseAndRelease("a");
    assertNotSame(old, fresh);
    assertFalse(old.isClosed());
    assertEquals(4, cache.stats().openFds(), "the invalidated value still holds its fds");
    l.close();
    old.awaitClosed();
    assertFalse(fresh.isClosed());
    assertEquals(1, cache.stats().removalCount(RemovalCause.INVALIDATED));
  }

  @Test
  void invalidateIfRemovesMatchingKeys() throws Exception {
    create(config());
    List<TestValue> dn1 = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      dn1.add(leaseAndRelease("dn1/" + i));
      leaseAndRelease("dn2/" + i);
    }
    assertEquals(5, cache.invalidateIf(k -> k.startsWith("dn1/")));
    for (TestValue v : dn1) {
      v.awaitClosed();
    }
    assertEquals(5, cache.stats().entryCount());
    assertEquals(5, cache.stats().invalidationCount());
  }

  @Test
  void staleValueIsReplacedNotServed() throws Exception {
    create(config());
    TestValue old = leaseAndRelease("a");
    old.valid = false; // the DataNode cleared the slot's VALID bit
    TestValue fresh = leaseAndRelease("a");
    assertNotSame(old, fresh);
    old.awaitClosed();
    assertEquals(1, cache.stats().removalCount(RemovalCause.STALE));
    fresh.valid = false;
    cache.cleanUp(); // maintenance also drops idle stale values
    fresh.awaitClosed();
    assertEquals(0, cache.stats().entryCount());
  }

  @Test
  void fdBudgetEvictsIdleEntriesAndRefusesWhenAllAreLeased() throws Exception {
    create(config().fdBudget(4).fdBudgetWait(Duration.ofSeconds(5)));
    Lease<TestValue> a = cache.lease("a", this::load);
    Lease<TestValue> b = cache.lease("b", this::load);
    FdBudgetExhaustedException e =
        assertThrows(FdBudgetExhaustedException.class, () -> cache.lease("c", this::load));
    assertTrue(e.getMessage().contains("fd budget 4"), e.getMessage());
    assertEquals(2, loaderCalls.get(), "the loader is not called without budget");
    TestValue av = a.value();
    a.close();
    TestValue c = leaseAndRelease("c"); // evicts idle a, waits for the closer to free its fds
    av.awaitClosed();
    assertFalse(c.isClosed());
    assertEquals(1, cache.stats().removalCount(RemovalCause.FD_BUDGET));
    assertTrue(ledger.maxOpenFds.get() <= 4, "max open fds " + ledger.maxOpenFds.get());
    b.close();
  }

  @Test
  void closeClosesIdleNowLeasedLaterAndIsIdempotent() throws Exception {
    create(config());
    TestValue idle = leaseAndRelease("idle");
    Lease<TestValue> held = cache.lease("held", this::load);
    cache.close();
    assertEquals(1, idle.closes.get(), "idle values are closed before close() returns");
    assertFalse(held.value().isClosed());
    assertThrows(LeaseCacheClosedException.class, () -> cache.lease("x", this::load));
    cache.close();
    TestValue hv = held.value();
    held.close();
    assertEquals(1, hv.closes.get(), "closed by the releasing thread once the closer stopped");
    assertEquals(0, cache.stats().openFds());
    assertEquals(2, cache.stats().removalCount(RemovalCause.CACHE_CLOSED));
  }

  @Test
  void closerThreadStopsOnClose() {
    create(config().name("stop-test"));
    cache.close();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      assertFalse(t.getName().equals("stop-test-closer") && t.isAlive(), "closer still running");
    }
  }

  private void assertDoesCloseSoon(TestValue v) throws InterruptedException {
    v.awaitClosed();
    assertEquals(1, v.closes.get());
  }

  /** Spins (yielding) until a state another thread is driving toward is reached. */
  static void awaitCondition(java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not reached within 10 s");
      }
      Thread.onSpinWait();
    }
  }

  /**
   * A reader on the hit path asks the value whether it is still valid. The entry must not be closed
   * under it: for a replica, closing releases the slot and may unmap its segment, and the validity
   * check is a read of that slot (a JVM crash in CI before the lease was taken first).
   */
  @Test
  void aValueIsNeverClosedWhileAReaderChecksItsValidity() throws Exception {
    create(config());
    TestValue value = leaseAndRelease("a");
    CountDownLatch inCheck = new CountDownLatch(1);
    CountDownLatch proceed = new CountDownLatch(1);
    value.duringIsValid =
        () -> {
          value.duringIsValid = null;
          inCheck.countDown();
          try {
            proceed.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        };
    Future<TestValue> reader = pool.submit(() -> leaseAndRelease("a"));
    assertTrue(inCheck.await(10, TimeUnit.SECONDS), "the reader reached the validity check");
    cache.close(); // retires everything and closes what is not leased, before returning
    boolean closedUnderReader = value.isClosed();
    proceed.countDown();
    assertFalse(closedUnderReader, "closed while a reader was checking it");
    assertSame(value, reader.get(10, TimeUnit.SECONDS), "the reader held its lease: a hit");
    assertTrue(value.isClosed(), "closed by the reader returning the last lease");
    assertEquals(1, value.closes.get());
  }
}
