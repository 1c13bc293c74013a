package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link ReusableLease}: one object, many leases, the lease contract for each. */
class ReusableLeaseTest {
  private final TestValue.Ledger ledger = new TestValue.Ledger();
  private final AtomicInteger loads = new AtomicInteger();
  private final LeaseCache<Object, TestValue> cache =
      LeaseCache.create(
          LeaseCacheConfig.newBuilder()
              .ticker(new FakeTicker())
              .capacity(100)
              .fdBudget(1000)
              .stripes(1)
              .maintenanceInterval(Duration.ofHours(1))
              .build());

  private TestValue load(Object key) {
    loads.incrementAndGet();
    return ledger.open(key, 2);
  }

  @AfterEach
  void tearDown() {
    cache.close();
    assertTrue(ledger.violations.isEmpty(), ledger.violations.toString());
  }

  @Test
  void oneObjectServesLeaseAfterLeaseWithTheContractForEach() throws IOException {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    assertFalse(lease.isOpen());
    assertThrows(IllegalStateException.class, lease::value);

    cache.lease("a", this::load, lease);
    assertTrue(lease.isOpen());
    TestValue a = lease.value();
    assertEquals("a", a.key);
    lease.close();
    lease.close(); // idempotent
    assertFalse(lease.isOpen());
    assertThrows(IllegalStateException.class, lease::value, "a closed lease is unusable");

    cache.lease("b", this::load, lease);
    assertEquals("b", lease.value().key);
    lease.close();
    cache.lease("a", this::load, lease);
    assertSame(a, lease.value(), "a hit returns the cached value");
    lease.close();

    assertEquals(2, loads.get());
    assertEquals(1, cache.stats().hitCount());
    assertEquals(2, cache.stats().missCount());
    assertEquals(0, cache.stats().leasedEntryCount());
  }

  @Test
  void openingAnOpenLeaseThrowsAndLeavesItAlone() throws IOException {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    cache.lease("a", this::load, lease);
    assertThrows(IllegalStateException.class, () -> cache.lease("b", this::load, lease));
    assertThrows(IllegalStateException.class, () -> cache.leaseIfPresent("a", lease));
    assertEquals("a", lease.value().key);
    assertEquals(1, cache.stats().leasedEntryCount(), "no lease was taken for the refused calls");
    assertEquals(1, loads.get());
    lease.close();
    assertEquals(0, cache.stats().leasedEntryCount());
  }

  @Test
  void leaseIfPresentOnlyHitsAndNeverKeepsTheKey() throws IOException {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    MutableKey probe = new MutableKey("a");
    assertFalse(cache.leaseIfPresent(probe, lease), "absent: no load");
    assertEquals(0, loads.get());
    assertEquals(0, cache.stats().missCount(), "a probe that finds nothing is not a miss");
    assertFalse(lease.isOpen());

    cache.lease(new MutableKey("a"), this::load, lease);
    TestValue a = lease.value();
    lease.close();
    assertTrue(cache.leaseIfPresent(probe, lease));
    assertSame(a, lease.value());
    lease.close();

    probe.name = "b"; // the cache must not have kept the probe
    assertFalse(cache.leaseIfPresent(probe, lease));
    assertTrue(cache.leaseIfPresent(new MutableKey("a"), lease));
    assertSame(a, lease.value());
    lease.close();
    assertEquals(2, cache.stats().hitCount());
  }

  @Test
  void staleValuesAreNotServedByTheProbeAndAreReplacedByLease() throws IOException {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    cache.lease("a", this::load, lease);
    TestValue old = lease.value();
    lease.close();
    old.valid = false;
    assertFalse(cache.leaseIfPresent("a", lease));
    assertFalse(old.isClosed(), "the probe leaves stale entries to lease()");
    cache.lease("a", this::load, lease);
    assertNotSame(old, lease.value());
    lease.close();
    assertEquals(1, cache.stats().removalCount(RemovalCause.STALE));
  }

  @Test
  void aValueStaysOpenWhileAReusableLeaseHoldsIt() throws Exception {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    cache.lease("a", this::load, lease);
    TestValue a = lease.value();
    a.testLeases.incrementAndGet();
    cache.invalidate("a");
    assertFalse(a.isClosed());
    assertSame(a, lease.value(), "open leases keep working after invalidation");
    a.testLeases.decrementAndGet();
    lease.close();
    a.awaitClosed();
    assertEquals(1, a.closes.get());
  }

  @Test
  void aFailedLoadLeavesTheLeaseClosedAndReusable() throws IOException {
    ReusableLease<TestValue> lease = new ReusableLease<>();
    LeaseLoadException e =
        assertThrows(
            LeaseLoadException.class,
            () ->
                cache.lease(
                    "a",
                    k -> {
                      throw new IOException("no such block");
                    },
                    lease));
    assertInstanceOf(IOException.class, e.getCause());
    assertFalse(lease.isOpen());
    cache.lease("a", this::load, lease);
    assertEquals("a", lease.value().key);
    lease.close();
  }

  /** A key whose fields change: the cache must only look it up, never store it. */
  private static final class MutableKey {
    String name;

    MutableKey(String name) {
      this.name = name;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof MutableKey && ((MutableKey) o).name.equals(name);
    }

    @Override
    public int hashCode() {
      return name.hashCode();
    }
  }
}
