package io.scr.benchmarks.shm;

import io.scr.shm.Slot;
import java.util.ArrayList;
import java.util.List;
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
 * Slot allocation + release pairs per second: scr's lock-free {@code SlotPool} against a stock-like
 * single-lock pool, in the same run.
 *
 * <p>Setup holds {@link #held} slots for the whole trial, as a client's replica cache holds open
 * replicas; without them the stock-like pool would tear its only segment down and reload it on
 * every pair. Loading a segment costs {@link #loadCostMicros} µs of spinning (the
 * REQUEST_SHORT_CIRCUIT_SHM round trip) on whichever thread loads it: the allocating thread for the
 * stock-like pool, the refill thread for scr. Releases cost nothing remote in either pool (scr
 * still sends them through its maintenance thread).
 *
 * <pre>
 * mvn -B -q -pl benchmarks -am package -DskipTests
 * java -cp benchmarks/target/benchmarks-0.1.0-SNAPSHOT.jar:$(cat benchmarks/target/classpath.txt) \
 *     org.openjdk.jmh.Main 'io.scr.benchmarks.shm.*' -f 1 -wi 3 -w 2s -i 5 -r 2s -t 8
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class SlotPoolBenchmark {
  @Param({"SCR_SLOT_POOL", "STOCK_LIKE_SINGLE_LOCK"})
  SlotPoolType poolType;

  @Param({"64"})
  int held;

  @Param({"50"})
  long loadCostMicros;

  SlotPoolType.Adapter pool;
  private final List<Slot> heldSlots = new ArrayList<>();

  @Setup(Level.Trial)
  public void setUp() {
    pool = poolType.create(TimeUnit.MICROSECONDS.toNanos(loadCostMicros));
    for (int i = 0; i < held; i++) {
      heldSlots.add(pool.allocate());
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    heldSlots.forEach(pool::release);
    heldSlots.clear();
    pool.close();
  }

  @Benchmark
  public Slot allocateRelease() {
    Slot slot = pool.allocate();
    pool.release(slot);
    return slot;
  }
}
