package io.scr.core.hdfs.conformance;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Assumptions;

/**
 * The client read paths the conformance suite compares, each as a way to open a {@link FileSystem}
 * on a {@link MiniDfs} cluster. Every path must return the bytes that were written; the paths
 * differ only in who serves them, which {@link #shortCircuitsLocalReads()} states.
 */
public enum ReadPath {
  /** Stock client, short-circuit off: every byte over TCP. The reference. */
  STOCK_TCP(false) {
    @Override
    void configure(Configuration conf, MiniDfs dfs) {
      conf.setBoolean("dfs.client.read.shortcircuit", false);
    }
  },
  /**
   * Stock client with libhadoop short-circuit reads: against a {@code STOCK_SCR} cluster (stock on
   * both sides) or a {@code SHIM} cluster (mode C: the stock client served by the scr shim, whose
   * socket the fixture's SHIM client configuration names in {@code dfs.domain.socket.path}).
   * Skipped (JUnit assumption) where {@link StockLibhadoop#unusable()}.
   */
  STOCK_SCR(true) {
    @Override
    void configure(Configuration conf, MiniDfs dfs) {
      if (dfs.mode() == DataNodeMode.TCP) {
        throw new IllegalStateException(
            "STOCK_SCR reads need a STOCK_SCR or SHIM cluster, not " + dfs.mode());
      }
      Assumptions.assumeFalse(StockLibhadoop.unusable(), StockLibhadoop.REASON);
      conf.setBoolean("dfs.client.read.shortcircuit", true);
    }
  },
  /**
   * Stock {@code DistributedFileSystem} with the scr {@code ReplicaAccessorBuilder} (integration
   * point 1). Stock short-circuit stays off so every short-circuit byte is the accessor's.
   */
  SCR_ACCESSOR(true) {
    @Override
    void configure(Configuration conf, MiniDfs dfs) {
      requireClass(ACCESSOR_BUILDER_CLASS);
      conf.set("dfs.client.replica.accessor.builder.classes", ACCESSOR_BUILDER_CLASS);
      conf.setBoolean("dfs.client.read.shortcircuit", false);
      scrSockets(conf, dfs);
    }
  },
  /**
   * {@code fs.hdfs.impl = io.scr.core.hdfs.ScrFileSystem} (integration point 2). Stock
   * short-circuit stays off (ScrFileSystem does not need it), so a stock fallback could not count a
   * short-circuit byte: every one counted is scr's.
   */
  SCR_FILESYSTEM(true) {
    @Override
    void configure(Configuration conf, MiniDfs dfs) {
      requireClass(FILE_SYSTEM_CLASS);
      conf.set("fs.hdfs.impl", FILE_SYSTEM_CLASS);
      conf.setBoolean("dfs.client.read.shortcircuit", false);
      scrSockets(conf, dfs);
    }
  },
  /**
   * {@link #SCR_FILESYSTEM} with mapped reads on from a replica's first read ({@code
   * scr.client.read.mapped.enabled}, off by default): every local read after the first copies from
   * a mapping of the block file.
   */
  SCR_FILESYSTEM_MAPPED(true) {
    @Override
    void configure(Configuration conf, MiniDfs dfs) {
      SCR_FILESYSTEM.configure(conf, dfs);
      conf.setBoolean("scr.client.read.mapped.enabled", true);
      conf.setInt("scr.client.read.mapped.min-reads", 1);
    }
  };

  static final String ACCESSOR_BUILDER_CLASS = "io.scr.core.hdfs.ScrReplicaAccessorBuilder";
  static final String FILE_SYSTEM_CLASS = "io.scr.core.hdfs.ScrFileSystem";

  private final boolean shortCircuitsLocalReads;

  ReadPath(boolean shortCircuitsLocalReads) {
    this.shortCircuitsLocalReads = shortCircuitsLocalReads;
  }

  /** Whether reads of local, finalized replicas count as short-circuit bytes on this path. */
  public boolean shortCircuitsLocalReads() {
    return shortCircuitsLocalReads;
  }

  /** Opens a new, uncached file system for this path; the cluster closes it. */
  public FileSystem open(MiniDfs dfs) {
    return open(dfs, c -> {});
  }

  /** Opens a new file system for this path with {@code extra} settings applied last. */
  public FileSystem open(MiniDfs dfs, Consumer<Configuration> extra) {
    return dfs.newFileSystem(
        c -> {
          configure(c, dfs);
          extra.accept(c);
        });
  }

  abstract void configure(Configuration conf, MiniDfs dfs);

  /**
   * Where the scr client finds the DataNode sockets: in mode A the stock {@code
   * dfs.domain.socket.path} the cluster already sets; in mode B the shim's path.
   */
  static void scrSockets(Configuration conf, MiniDfs dfs) {
    if (dfs.mode() == DataNodeMode.SHIM) {
      conf.set("scr.client.socket.paths", conf.get(MiniDfs.SHIM_SOCKET_PATH_KEY));
    }
  }

  private static void requireClass(String name) {
    try {
      Class.forName(name, false, ReadPath.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(name + " is not on the test classpath (not built yet?)", e);
    }
  }
}
