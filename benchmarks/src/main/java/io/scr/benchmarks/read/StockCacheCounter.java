package io.scr.benchmarks.read;

import java.lang.reflect.Field;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.ClientContext;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.ExtendedBlockId;
import org.apache.hadoop.hdfs.client.impl.DfsClientConf;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitCache;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitReplicaInfo;

/**
 * Hit and miss counts for stock short-circuit reads, which stock does not keep: replaces the stock
 * {@link ShortCircuitCache}s of a client context with {@link CountingCache}s built from the same
 * settings. Every stock short-circuit block read looks its replica up once ({@code fetchOrCreate});
 * a miss is a lookup that had to create the replica (a REQUEST_SHORT_CIRCUIT_FDS round trip to the
 * DataNode, two fds and a slot).
 *
 * <p>Reaches into {@code ClientContext.shortCircuitCache} (Hadoop 3.4.2) by reflection: the array
 * field is final, its elements are not. The replaced caches are closed here; the counting ones are
 * closed with the context's caches by the cluster fixture. Thread-safe counters.
 */
public final class StockCacheCounter {
  private final CountingCache[] caches;

  private StockCacheCounter(CountingCache[] caches) {
    this.caches = caches;
  }

  /** Installs counting caches in the client context of {@code fs}; call before reading. */
  public static StockCacheCounter install(DistributedFileSystem fs) {
    ClientContext context = fs.getClient().getClientContext();
    DfsClientConf.ShortCircuitConf conf = fs.getClient().getConf().getShortCircuitConf();
    try {
      Field field = ClientContext.class.getDeclaredField("shortCircuitCache");
      field.setAccessible(true);
      ShortCircuitCache[] slots = (ShortCircuitCache[]) field.get(context);
      CountingCache[] counting = new CountingCache[slots.length];
      for (int i = 0; i < slots.length; i++) {
        ShortCircuitCache old = slots[i];
        counting[i] = new CountingCache(conf);
        slots[i] = counting[i];
        old.close();
      }
      return new StockCacheCounter(counting);
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalStateException(
          "cannot install counting short-circuit caches: ClientContext.shortCircuitCache is not the"
              + " ShortCircuitCache[] of Hadoop 3.4.2 on this classpath",
          e);
    }
  }

  /** Replica lookups so far (one per stock short-circuit block read). */
  public long lookups() {
    long n = 0;
    for (CountingCache c : caches) {
      n += c.lookups.sum();
    }
    return n;
  }

  /** Lookups that created the replica (fds requested from the DataNode). */
  public long misses() {
    long n = 0;
    for (CountingCache c : caches) {
      n += c.creations.sum();
    }
    return n;
  }

  /** A stock cache that counts lookups and creations; behaviour otherwise unchanged. */
  static final class CountingCache extends ShortCircuitCache {
    final LongAdder lookups = new LongAdder();
    final LongAdder creations = new LongAdder();

    CountingCache(DfsClientConf.ShortCircuitConf conf) {
      super(
          conf.getShortCircuitStreamsCacheSize(),
          conf.getShortCircuitStreamsCacheExpiryMs(),
          conf.getShortCircuitMmapCacheSize(),
          conf.getShortCircuitMmapCacheExpiryMs(),
          conf.getShortCircuitMmapCacheRetryTimeout(),
          conf.getShortCircuitCacheStaleThresholdMs(),
          conf.getShortCircuitSharedMemoryWatcherInterruptCheckMs());
    }

    @Override
    public ShortCircuitReplicaInfo fetchOrCreate(
        ExtendedBlockId key, ShortCircuitReplicaCreator creator) {
      lookups.increment();
      return super.fetchOrCreate(
          key,
          () -> {
            creations.increment();
            return creator.createShortCircuitReplicaInfo();
          });
    }
  }
}
