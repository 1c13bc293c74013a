package io.scr.shim;

import io.scr.shm.SegmentFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;

/** Shim services for tests that serve requests without a DataNode around them. */
final class TestServices {
  private TestServices() {}

  /**
   * A service over {@code dataset} with block tokens not checked, the default segment factory, no
   * DataNode accounting and the scr extensions offered.
   */
  /** A service for requests that never reach the dataset (probes, malformed requests). */
  static ShortCircuitService probesOnly(
      SegmentRegistry registry, ClientLimits limits, ShimMetrics metrics) {
    return withoutTokens(
        () -> {
          throw new AssertionError("a probe never reaches the dataset");
        },
        registry,
        limits,
        metrics);
  }

  static ShortCircuitService withoutTokens(
      ShortCircuitService.DatasetAccess dataset,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics) {
    return new ShortCircuitService(
        dataset,
        null,
        registry,
        limits,
        SegmentFactory.newBuilder().build(),
        metrics,
        DataNodeAccounting.NONE,
        true,
        Ticker.SYSTEM);
  }

  /**
   * Access to {@code dataset} that holds the serving thread: it counts {@code entered} down, waits
   * for {@code release} (at most 20 s), runs {@code released} and only then answers.
   */
  static ShortCircuitService.DatasetAccess holding(
      CountDownLatch entered, CountDownLatch release, Runnable released, FsDatasetSpi<?> dataset) {
    return () -> {
      entered.countDown();
      try {
        release.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      released.run();
      return dataset;
    };
  }
}
