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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Slot allocation + release pairs per second at 1, 2 and 8 threads: scr's lock-free {@code
 * SlotPool} against a stock-like single-lock pool, in the same run. With 2 cores, 8 threads measure
 * behaviour under oversubscription (the pool must not collapse), not parallel speed-up.
 *
 * <p>Setup holds {@link #held} slots for the whole trial, as a client's replica cache holds open
 * replicas; without them the stock-like pool would tear its only segment down and reload it on
 * every pair. Loading a segment costs {@link #loadCostMicros} µs of spinning (the
 * REQUEST_SHORT_CIRCUIT_SHM round trip) on whichever thread loads it: the allocating thread for the
 * stock-like pool, the refill thread for scr. Releases cost nothing remote in either pool (scr
 * still tells the releaser about every release, from its maintenance thread or, when the pool is
 * otherwise empty, from the allocating thread). scr's pool runs with its defaults, including the 50
 * ms allocation wait; an allocation that times out costs its thread those 50 ms and then proceeds
 * without a slot, as a reader would (no release follows). The pool's counters are printed at the
 * end of each trial: {@code timeouts=} must be reported with the score (a collapse shows as a low
 * score and many timeouts), along with growth, callers that told releases, and waits.
 *
 * <pre>
 * ./scr bench 'io.scr.benchmarks.shm.*'
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
    String stats = pool.describe();
    if (!stats.isEmpty()) {
      System.out.println(poolType + ": " + stats);
    }
    pool.close();
  }

  /** One thread, uncontended: the target is at least 10 million pairs per second. */
  @Benchmark
  @Threads(1)
  public Slot pairs1Thread() {
    return allocateRelease();
  }

  /** As many threads as the reference machine has cores. */
  @Benchmark
  @Threads(2)
  public Slot pairs2Threads() {
    return allocateRelease();
  }

  /** Four threads per core: the pool must not collapse. */
  @Benchmark
  @Threads(8)
  public Slot pairs8Threads() {
    return allocateRelease();
  }

  private Slot allocateRelease() {
    Slot slot = pool.allocate();
    if (slot != null) {
      pool.release(slot);
    }
    return slot;
  }
}
