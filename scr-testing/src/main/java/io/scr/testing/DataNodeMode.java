package io.scr.testing;

/** How the DataNodes of a {@link MiniDfs} cluster serve local readers. */
public enum DataNodeMode {
  /** Short-circuit reads off: every read goes over TCP. The correctness reference. */
  TCP,
  /**
   * Stock short-circuit reads: the DataNode binds {@code dfs.domain.socket.path} with libhadoop,
   * which the build unpacks from {@code io.trino.hadoop:hadoop-apache} (see {@link StockNative}).
   */
  STOCK_SCR,
  /**
   * DataNodes load the scr shim ({@code io.scr.shim.ScrShimPlugin}) through {@code
   * dfs.datanode.plugins}; no libhadoop on the DataNode side.
   */
  SHIM
}
