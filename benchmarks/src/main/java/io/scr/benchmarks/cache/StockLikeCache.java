package io.scr.benchmarks.cache;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * The stock {@code ShortCircuitCache} locking pattern, reduced to its hit path: one {@link
 * ReentrantLock} guards the replica map, the reference counts and the evictable map keyed by a
 * unique {@code System.nanoTime()}; {@code fetch} takes it to find the replica, remove it from the
 * evictable map and increment the count; {@code unref} takes it again to decrement, re-insert into
 * the evictable map and trim, closing under the lock as stock does. A replica is created with count
 * 2 (cache + first user), so count 1 means evictable.
 */
final class StockLikeCache {
  private final ReentrantLock lock = new ReentrantLock();
  private final HashMap<Integer, BenchReplica> replicas = new HashMap<>();
  private final LinkedHashMap<Long, BenchReplica> evictable = new LinkedHashMap<>();
  private final int maxEvictable;

  StockLikeCache(int maxEvictable) {
    this.maxEvictable = maxEvictable;
  }

  BenchReplica fetch(Integer key, IntFunction<BenchReplica> create) {
    lock.lock();
    try {
      BenchReplica r = replicas.get(key);
      if (r == null) {
        r = create.apply(key);
        r.refCount = 2;
        replicas.put(key, r);
        return r;
      }
      if (r.refCount == 1) {
        evictable.remove(r.evictableTimeNs);
        r.evictableTimeNs = -1;
      }
      r.refCount++;
      return r;
    } finally {
      lock.unlock();
    }
  }

  void unref(BenchReplica r) {
    lock.lock();
    try {
      int n = --r.refCount;
      if (n == 1) {
        long t = System.nanoTime();
        while (evictable.containsKey(t)) {
          t++;
        }
        r.evictableTimeNs = t;
        evictable.put(t, r);
        trim();
      } else if (n == 0) {
        r.close(); // stock closes fds while holding the cache lock
      }
    } finally {
      lock.unlock();
    }
  }

  private void trim() {
    Iterator<Map.Entry<Long, BenchReplica>> it = evictable.entrySet().iterator();
    while (evictable.size() > maxEvictable && it.hasNext()) {
      BenchReplica r = it.next().getValue();
      it.remove();
      replicas.remove(r.id);
      if (--r.refCount == 0) {
        r.close();
      }
    }
  }
}
