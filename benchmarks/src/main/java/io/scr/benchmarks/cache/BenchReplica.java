package io.scr.benchmarks.cache;

import io.scr.cache.CachedValue;

/**
 * Stands in for an open replica: two "fds", a validity bit read like a shared-memory slot's, and a
 * close that only counts. The benchmarks measure the cache, not file I/O.
 */
final class BenchReplica implements CachedValue {
  final int id;
  private volatile boolean valid = true;
  volatile int closes;

  /** Stock-like baseline state, guarded by {@link StockLikeCache}'s lock. */
  int refCount;

  long evictableTimeNs = -1;

  BenchReplica(int id) {
    this.id = id;
  }

  @Override
  public int fdCost() {
    return 2;
  }

  @Override
  public boolean isValid() {
    return valid;
  }

  @Override
  public void close() {
    closes++;
  }
}
