package io.scr.benchmarks.shim;

import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.shm.Segment;
import io.scr.shm.ShmId;
import io.scr.shm.SlotId;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.StockNative;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
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
 * Telling a DataNode that {@code batch} slots of one segment are free (what a slot pool's
 * maintenance thread does for each release batch, up to 128 slots): one op 88 per slot to a stock
 * DataNode (libhadoop) and to the shim, against one op-127 BATCH_RELEASE to the shim. Sample time
 * of the whole batch, µs; divide by {@code batch} for the cost per slot.
 *
 * <p>Before each invocation (not measured) {@code batch} slots of a segment the DataNode gave this
 * client (op 89, mapped here) are marked VALID and registered with op 87 on the file's only block,
 * as a read would; the invocation then releases them all on one pooled connection, as {@code
 * DataNodeEndpoint.release} does. The DataNode runs in this JVM on the same 2 cores, so each round
 * trip includes its side.
 *
 * <pre>
 * ./scr bench 'SlotReleaseBenchmark'
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SlotReleaseBenchmark {
  /** Who is told, and how. */
  public enum Release {
    /** A stock DataNode (libhadoop): one op 88 per slot, the only way it understands. */
    STOCK_DATANODE_OP88(DataNodeMode.STOCK_SCR, false),
    /** The shim, spoken to like a stock DataNode: one op 88 per slot. */
    SHIM_OP88(DataNodeMode.SHIM, false),
    /** The shim with the scr extension: one op-127 BATCH_RELEASE for the whole batch. */
    SHIM_BATCHED(DataNodeMode.SHIM, true);

    final DataNodeMode mode;
    final boolean batched;

    Release(DataNodeMode mode, boolean batched) {
      this.mode = mode;
      this.batched = batched;
    }
  }

  @Param({"STOCK_DATANODE_OP88", "SHIM_OP88", "SHIM_BATCHED"})
  Release release;

  @Param({"1", "16", "128"})
  int batch;

  private MiniDfs dfs;
  private DomainSocketPool pool;
  private ShortCircuitExchanges.ShmGrant segment;
  private Segment mapped;
  private String path;
  private LocatedBlock block;
  private final List<SlotId> slots = new ArrayList<>();

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    if (release.mode == DataNodeMode.STOCK_SCR) {
      StockNative.requireAvailable();
    }
    dfs = MiniDfs.builder().mode(release.mode).blockSize(1 << 20).start();
    dfs.writeRandomFile("/release", 4096, 5);
    block = dfs.fileSystem().getClient().getLocatedBlocks("/release", 0).get(0);
    path = dfs.socketPath(0);
    pool = DomainSocketPool.newBuilder().build();
    segment = ShortCircuitExchanges.requestShm(pool, path, "slot-release-bench");
    try (FileInputStream shmFile = new FileInputStream(segment.fd())) {
      mapped = Segment.map(segment.shmId(), segment.fd(), (int) shmFile.getChannel().size());
    }
    ShmId shm = segment.shmId();
    for (int i = 0; i < batch; i++) {
      slots.add(SlotId.of(shm, i));
    }
  }

  /** Registers the batch's slots (op 87 each, fds closed at once), as reads would have. */
  @Setup(Level.Invocation)
  public void register() throws IOException {
    FileDescriptor[] fds = new FileDescriptor[2];
    for (SlotId slot : slots) {
      // As a client does before op 87: the DataNode registers only a slot marked VALID.
      mapped.slot(slot.index()).makeValid();
      ShortCircuitExchanges.requestFds(
          pool, path, block.getBlock(), block.getBlockToken(), slot, fds);
      new FileInputStream(fds[0]).close();
      new FileInputStream(fds[1]).close();
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (segment != null) {
      segment.connection().close();
    }
    if (mapped != null) {
      mapped.close();
    }
    if (pool != null) {
      pool.close();
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  @Benchmark
  public int releaseBatch() throws IOException {
    if (release.batched) {
      return ShortCircuitExchanges.releaseSlotsBatched(pool, path, slots);
    }
    ShortCircuitExchanges.releaseSlots(pool, path, slots);
    return slots.size();
  }
}
