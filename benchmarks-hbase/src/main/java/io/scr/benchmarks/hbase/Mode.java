package io.scr.benchmarks.hbase;

/**
 * One read path of the benchmark: what the DataNode process runs (a stock DataNode with libhadoop
 * serving {@code dfs.domain.socket.path}, or the scr shim plugin without libhadoop) and what the
 * HBase process's HDFS client is configured to do. Both come from configuration only, as on a
 * cluster: the same jars everywhere.
 */
public enum Mode {
  /** Stock HDFS client over TCP to the DataNode. */
  STOCK_TCP("stock TCP", DataNodeSide.STOCK, Client.STOCK_TCP, false),
  /** Stock short-circuit reads with HBase's 128 KiB buffer, libhadoop on both sides. */
  STOCK_SCR("stock short-circuit", DataNodeSide.STOCK, Client.STOCK_SCR, false),
  /** scr's replica accessor in the stock file system, stock DataNode (deployment mode A). */
  ACCESSOR_STOCK_DN("accessor, stock DN", DataNodeSide.STOCK, Client.ACCESSOR, false),
  /** {@code ScrFileSystem}, stock DataNode (deployment mode A). */
  SCR_FS_STOCK_DN("ScrFileSystem, stock DN", DataNodeSide.STOCK, Client.SCR_FILE_SYSTEM, false),
  /** scr's replica accessor, shim DataNode (deployment mode B). */
  ACCESSOR_SHIM_DN("accessor, shim DN", DataNodeSide.SHIM, Client.ACCESSOR, false),
  /** {@code ScrFileSystem}, shim DataNode (deployment mode B). */
  SCR_FS_SHIM_DN("ScrFileSystem, shim DN", DataNodeSide.SHIM, Client.SCR_FILE_SYSTEM, false),
  /**
   * The floor: every block of the table in the RegionServer's block cache, so a get reads nothing
   * from HDFS. The physical limit any HDFS read path can approach.
   */
  FLOOR("floor (block cache)", DataNodeSide.STOCK, Client.STOCK_SCR, true);

  /** What serves short-circuit reads in the DataNode process. */
  public enum DataNodeSide {
    /** A stock DataNode with libhadoop and {@code dfs.domain.socket.path}. */
    STOCK,
    /** The scr shim plugin ({@code dfs.datanode.plugins}), no libhadoop in the DataNode. */
    SHIM
  }

  /** How the HBase process's HDFS client reads. */
  public enum Client {
    STOCK_TCP,
    STOCK_SCR,
    ACCESSOR,
    SCR_FILE_SYSTEM
  }

  /** The label of tables and charts. */
  public final String label;

  public final DataNodeSide dataNode;
  public final Client client;

  /** Whether the table's data blocks stay in the block cache (the floor) instead of HDFS. */
  public final boolean blockCache;

  Mode(String label, DataNodeSide dataNode, Client client, boolean blockCache) {
    this.label = label;
    this.dataNode = dataNode;
    this.client = client;
    this.blockCache = blockCache;
  }

  /** Whether every byte this mode reads from HDFS must be scr's short-circuit bytes. */
  public boolean isScr() {
    return client == Client.ACCESSOR || client == Client.SCR_FILE_SYSTEM;
  }
}
