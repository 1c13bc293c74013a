package io.scr.benchmarks.shim;

import io.scr.shim.InvalidationScanFixture;
import java.io.IOException;
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
 * Cost of one shim invalidation scan (µs per scan) over 1k, 10k and 100k registered slots: the
 * shim's real segment registry and slot words, scanned against a dataset stub (a map of finalized
 * replicas standing in for the DataNode's replica map). Nothing changes between scans, which is the
 * steady state the scan runs in every {@code scr.shim.invalidation.interval.ms}: one replica lookup
 * per watched block and one identity and generation-stamp comparison per slot. With {@code
 * slotsPerBlock = 1} every slot is its own block (the most lookups per slot).
 *
 * <p>There is no stock competitor: a stock DataNode does no scan (its {@code ShortCircuitRegistry}
 * is told of each deletion), which the shim cannot hook without libhadoop segments (see
 * docs/shim.md, "Invalidation").
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks-0.1.0-SNAPSHOT.jar:$(cat benchmarks/target/classpath.txt) \
 *     org.openjdk.jmh.Main 'io.scr.benchmarks.shim.InvalidationScanBenchmark' -wi 1 -i 2 -r 1s
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class InvalidationScanBenchmark {
  @Param({"1000", "10000", "100000"})
  int slots;

  @Param({"1"})
  int slotsPerBlock;

  InvalidationScanFixture fixture;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    fixture = InvalidationScanFixture.create(slots, slotsPerBlock);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (fixture.scan() != 0 || fixture.validSlots() != slots) {
      throw new IllegalStateException("the scan invalidated slots of unchanged replicas");
    }
    fixture.close();
  }

  @Benchmark
  public int scan() {
    return fixture.scan();
  }
}
