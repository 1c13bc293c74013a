package io.scr.benchmarks.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.scr.cache.Lease;
import io.scr.cache.LeaseCache;
import io.scr.cache.LeaseCacheConfig;
import io.scr.cache.ReusableLease;
import io.scr.cache.ValueLoader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.function.Function;

/**
 * The caches compared, behind one adapter (after Caffeine's {@code CacheType}). Each adapter's
 * {@link Adapter#leaseAndRelease} does what scr-core does per pread: obtain the replica, use it,
 * give it back.
 */
public enum CacheType {
  /** {@link LeaseCache}: map get + CAS lease, CAS release, lossy LRU record. */
  SCR_LEASE_CACHE {
    @Override
    Adapter create(int capacity) {
      LeaseCache<Integer, BenchReplica> cache = newLeaseCache(capacity);
      return new Adapter() {
        @Override
        public int leaseAndRelease(Integer key) {
          try (Lease<BenchReplica> l = cache.lease(key, k -> new BenchReplica(k))) {
            return l.value().id;
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }

        @Override
        public void close() {
          cache.close();
        }
      };
    }
  },

  /**
   * {@link LeaseCache} through a {@link ReusableLease} per thread (found through a ThreadLocal
   * here; scr-core keeps it in its stream): the allocation-free hit path.
   */
  SCR_LEASE_CACHE_REUSABLE {
    @Override
    Adapter create(int capacity) {
      LeaseCache<Integer, BenchReplica> cache = newLeaseCache(capacity);
      ThreadLocal<ReusableLease<BenchReplica>> leases = ThreadLocal.withInitial(ReusableLease::new);
      ValueLoader<Integer, BenchReplica> load = BenchReplica::new;
      return new Adapter() {
        @Override
        public int leaseAndRelease(Integer key) {
          ReusableLease<BenchReplica> l = leases.get();
          try {
            cache.lease(key, load, l);
            return l.value().id;
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          } finally {
            l.close();
          }
        }

        @Override
        public void close() {
          cache.close();
        }
      };
    }
  },

  /** One ReentrantLock around fetch and unref, like stock ShortCircuitCache. */
  STOCK_LIKE_SINGLE_LOCK {
    @Override
    Adapter create(int capacity) {
      StockLikeCache cache = new StockLikeCache(capacity);
      return new Adapter() {
        @Override
        public int leaseAndRelease(Integer key) {
          BenchReplica r = cache.fetch(key, BenchReplica::new);
          try {
            return r.id;
          } finally {
            cache.unref(r);
          }
        }

        @Override
        public void close() {}
      };
    }
  },

  /**
   * Caffeine {@code get(key, mappingFunction)} with a removal listener that closes. No leases: an
   * entry can be evicted and closed while a reader still uses it, which is why scr cannot use it as
   * is for fds.
   */
  CAFFEINE {
    @Override
    Adapter create(int capacity) {
      Cache<Integer, BenchReplica> cache =
          Caffeine.newBuilder()
              .maximumSize(capacity)
              .removalListener(
                  (Integer k,
                      BenchReplica v,
                      com.github.benmanes.caffeine.cache.RemovalCause c) -> {
                    if (v != null) {
                      v.close();
                    }
                  })
              .build();
      Function<Integer, BenchReplica> load = BenchReplica::new;
      return new Adapter() {
        @Override
        public int leaseAndRelease(Integer key) {
          return cache.get(key, load).id;
        }

        @Override
        public void close() {
          cache.invalidateAll();
        }
      };
    }
  };

  abstract Adapter create(int capacity);

  static LeaseCache<Integer, BenchReplica> newLeaseCache(int capacity) {
    return LeaseCache.create(
        LeaseCacheConfig.newBuilder()
            .name("bench-lease-cache")
            .capacity(capacity)
            .fdBudget(4L * capacity)
            .idleExpiry(Duration.ofHours(1))
            .build());
  }

  /** One cache under test. */
  interface Adapter extends AutoCloseable {
    /** Leases the value for {@code key}, reads it, releases it. */
    int leaseAndRelease(Integer key);

    @Override
    void close();
  }
}
