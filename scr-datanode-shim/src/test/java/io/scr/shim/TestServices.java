package io.scr.shim;

import io.scr.shm.SegmentFactory;

/** Shim services for tests that serve requests without a DataNode around them. */
final class TestServices {
  private TestServices() {}

  /**
   * A service over {@code dataset} with block tokens not checked, the default segment factory, no
   * DataNode accounting and the scr extensions offered.
   */
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
}
