package io.scr.benchmarks.cache;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Lease + release on cache hits: the per-pread cost of the replica cache in scr-core, for scr's
 * {@code LeaseCache}, a stock-like single-lock cache and Caffeine, in the same run.
 *
 * <p>The cache holds {@value #KEYS} keys, all loaded in setup, with capacity twice that, so every
 * operation is a hit. Each thread walks its own slice of a pre-computed uniform random key
 * sequence.
 *
 * <p>Run (threads 1, 2, 8, 32; add {@code -prof gc} for B/op):
 *
 * <pre>
 * mvn -B -q -pl benchmarks -am package -DskipTests
 * java -cp benchmarks/target/benchmarks-0.1.0-SNAPSHOT.jar:$(cat benchmarks/target/classpath.txt) \
 *     org.openjdk.jmh.Main 'io.scr.benchmarks.cache.*' -f 1 -wi 3 -w 2s -i 5 -r 2s -t 8
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class LeaseHitBenchmark {
  static final int KEYS = 1 << 12;
  private static final int SEQUENCE = 1 << 16;
  private static final int MASK = SEQUENCE - 1;

  @Param({"SCR_LEASE_CACHE", "SCR_LEASE_CACHE_REUSABLE", "STOCK_LIKE_SINGLE_LOCK", "CAFFEINE"})
  CacheType cacheType;

  CacheType.Adapter cache;
  Integer[] keys;

  /** Each thread's position in the key sequence. */
  @State(Scope.Thread)
  public static class ThreadState {
    int index = (int) (Thread.currentThread().getId() * 0x9E3779B9L) & MASK;
  }

  @Setup(Level.Trial)
  public void setUp() {
    cache = cacheType.create(2 * KEYS);
    keys = new Integer[SEQUENCE];
    SplittableRandom rnd = new SplittableRandom(7);
    for (int i = 0; i < SEQUENCE; i++) {
      keys[i] = rnd.nextInt(KEYS);
    }
    for (int k = 0; k < KEYS; k++) {
      cache.leaseAndRelease(k);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    cache.close();
  }

  @Benchmark
  public int leaseRelease(ThreadState t) {
    return cache.leaseAndRelease(keys[t.index++ & MASK]);
  }
}
