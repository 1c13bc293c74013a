package io.scr.shim;

import java.nio.file.Path;

/**
 * The shim for test clusters, named in {@code dfs.datanode.plugins} by {@code MiniDfs}, the
 * process-based clusters of scr-it-reliability, the HBase tests and the benchmarks: the socket path
 * check judges the socket's own directory (private, 0700) and trusts only the shared temporary
 * directory above it (world-writable {@code /tmp} on most machines), as stock's tests skip path
 * components. The production plugin has no such switch. Ships in this module's test jar.
 *
 * <p>Thread-safety: as {@link ScrShimPlugin}.
 */
public class TempDirShimPlugin extends ScrShimPlugin {
  public TempDirShimPlugin() {
    super(TempDirShimPlugin::parentOfSocketDirectory);
  }

  private static Path parentOfSocketDirectory(Path socketPath) {
    Path dir = socketPath.getParent();
    Path parent = dir == null ? null : dir.getParent();
    if (parent == null) {
      throw new IllegalArgumentException(
          socketPath + ": a test socket must lie in a directory of its own below another");
    }
    return parent;
  }
}
