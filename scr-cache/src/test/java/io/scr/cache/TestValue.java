package io.scr.cache;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A cached value that checks the cache's promises: it records how often it is closed, whether it
 * was closed while the test held a lease on it, and the process-wide fds "open" across values.
 */
final class TestValue implements CachedValue {

  /** Shared accounting for one test's values. */
  static final class Ledger {
    final AtomicLong openFds = new AtomicLong();
    final AtomicLong maxOpenFds = new AtomicLong();
    final AtomicInteger created = new AtomicInteger();
    final Queue<TestValue> all = new ConcurrentLinkedQueue<>();
    final Queue<String> violations = new ConcurrentLinkedQueue<>();

    TestValue open(Object key, int fdCost) {
      TestValue v = new TestValue(this, key, fdCost, created.incrementAndGet());
      long now = openFds.addAndGet(fdCost);
      maxOpenFds.accumulateAndGet(now, Math::max);
      all.add(v);
      return v;
    }
  }

  final Ledger ledger;
  final Object key;
  final int fdCost;
  final int serial;
  final AtomicInteger closes = new AtomicInteger();
  final AtomicInteger testLeases = new AtomicInteger();
  final CountDownLatch closed = new CountDownLatch(1);
  volatile boolean valid = true;

  /** Run inside the next {@link #isValid()} calls while set (tests park a reader there). */
  volatile Runnable duringIsValid;

  /** Non-zero while some thread is inside {@link #isValid()}. */
  final AtomicInteger checking = new AtomicInteger();

  private TestValue(Ledger ledger, Object key, int fdCost, int serial) {
    this.ledger = ledger;
    this.key = key;
    this.fdCost = fdCost;
    this.serial = serial;
  }

  @Override
  public int fdCost() {
    return fdCost;
  }

  @Override
  public boolean isValid() {
    if (closes.get() > 0) {
      // For a replica this is a read of a slot whose segment may already be unmapped.
      ledger.violations.add(this + " asked isValid() after close");
    }
    checking.incrementAndGet();
    try {
      Runnable hook = duringIsValid;
      if (hook != null) {
        hook.run();
      }
      return valid;
    } finally {
      checking.decrementAndGet();
    }
  }

  @Override
  public void close() {
    if (checking.get() != 0) {
      // For a replica: its segment is unmapped under a reader that is reading the slot.
      ledger.violations.add(this + " closed while a reader was checking its validity");
    }
    int leases = testLeases.get();
    if (leases != 0) {
      ledger.violations.add(this + " closed while " + leases + " leases were open");
    }
    if (closes.incrementAndGet() == 1) {
      ledger.openFds.addAndGet(-fdCost);
    } else {
      ledger.violations.add(this + " closed " + closes.get() + " times");
    }
    closed.countDown();
  }

  boolean isClosed() {
    return closes.get() > 0;
  }

  void awaitClosed() throws InterruptedException {
    assertTrue(closed.await(10, TimeUnit.SECONDS), this + " was not closed");
  }

  @Override
  public String toString() {
    return "TestValue{" + key + "#" + serial + "}";
  }
}
