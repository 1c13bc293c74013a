package io.scr.shm;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/** A ticker that moves only when the test says so. */
final class FakeTicker implements LongSupplier {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  @Override
  public long getAsLong() {
    return nanos.get();
  }

  void advance(long amount, TimeUnit unit) {
    nanos.addAndGet(unit.toNanos(amount));
  }
}
