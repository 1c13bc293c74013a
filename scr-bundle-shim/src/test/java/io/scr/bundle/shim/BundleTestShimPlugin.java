package io.scr.bundle.shim;

import io.scr.shim.ScrShimPlugin;
import java.nio.file.Path;

/**
 * The bundle's shim plugin for this module's test cluster: it trusts the temporary directory above
 * its socket directory, as the shim's own test plugin does (that one lives in the shim's test jar,
 * which the bundle tests keep off their class path with the rest of the unshaded shim).
 *
 * <p>Thread-safety: as {@link ScrShimPlugin}.
 */
public class BundleTestShimPlugin extends ScrShimPlugin {
  public BundleTestShimPlugin() {
    super(BundleTestShimPlugin::parentOfSocketDirectory);
  }

  private static Path parentOfSocketDirectory(Path socketPath) {
    return socketPath.getParent().getParent();
  }
}
