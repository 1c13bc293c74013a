package io.scr.testing;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one {@link MiniDfs} per test class and checks that closing it returned every thread and fd
 * it took.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final MiniDfsExtension DFS =
 *     MiniDfs.builder().dataNodes(1).blockSize(1 << 20).mode(DataNodeMode.STOCK_SCR)
 *         .buildExtension();
 * }</pre>
 *
 * <p>The field must be {@code static}: a cluster takes seconds to start, so it lives as long as the
 * test class, not one test method.
 */
public final class MiniDfsExtension
    implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback {
  /**
   * How long resources may take to wind down after the cluster shut down (threads ending, Netty's
   * graceful shutdown). 60 s. A socket that only the garbage collector closes passes a long wait,
   * so a long wait hides leaks (a segment connection of a prefetch batch left to the collector once
   * made ShimPrefetchBatchTest wait up to 43 s). A stock DataNode's watcher socket, left open when
   * its thread dies during a restart, never closes: {@link StockDataNodeWatchers} closes it. A
   * resource never released fails the check whatever the patience.
   */
  private static final Duration RELEASE_PATIENCE = Duration.ofSeconds(60);

  /** False until the first cluster of this JVM shut down; see {@link ResourceSnapshot}. */
  private static volatile boolean jvmWarm;

  private final MiniDfs.Builder spec;
  private ResourceSnapshot baseline;
  private MiniDfs dfs;

  MiniDfsExtension(MiniDfs.Builder spec) {
    this.spec = spec;
  }

  /** The running cluster of the current test class. */
  public MiniDfs dfs() {
    if (dfs == null) {
      throw new IllegalStateException(
          "the MiniDFSCluster is not running: register MiniDfsExtension on a static field");
    }
    return dfs;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    baseline = ResourceSnapshot.take();
    dfs = spec.start();
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    dfs(); // fails clearly when the extension was registered on an instance field
  }

  @Override
  public void afterAll(ExtensionContext context) {
    MiniDfs running = dfs;
    dfs = null;
    if (running == null) {
      return;
    }
    running.close();
    List<String> leaks =
        jvmWarm
            ? baseline.leakedSince(RELEASE_PATIENCE)
            : baseline.leakedSince(RELEASE_PATIENCE, running.ownedPaths());
    jvmWarm = true;
    if (!leaks.isEmpty()) {
      throw new AssertionError(
          "MiniDFSCluster ("
              + running.mode()
              + ") left resources behind after shutdown in "
              + context.getDisplayName()
              + ": "
              + leaks);
    }
  }
}
