package io.scr.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.hadoop.net.unix.DomainSocket;
import org.apache.hadoop.util.NativeCodeLoader;

/**
 * Makes stock libhadoop usable in tests and explains precisely why when it is not.
 *
 * <p>The build unpacks {@code nativelib/Linux-amd64/libhadoop.so} from the test-scope artifact
 * {@code io.trino.hadoop:hadoop-apache:3.3.5-3} into {@code target/native} (the {@code
 * unpack-stock-libhadoop} execution in the root pom) and starts test JVMs with {@code
 * -Djava.library.path} pointing there. The JVM reads {@code java.library.path} once at start-up, so
 * this class cannot load the library later; it verifies the result instead.
 */
public final class StockNative {
  private StockNative() {}

  /** Where the build put libhadoop.so, from the {@code scr.native.dir} system property. */
  public static Path nativeDir() {
    String dir = System.getProperty("scr.native.dir", System.getProperty("java.library.path", ""));
    return Paths.get(dir.split(java.io.File.pathSeparator)[0]);
  }

  /** Null when stock short-circuit reads can work in this JVM, otherwise the reason and the fix. */
  public static String unavailabilityCause() {
    Path lib = nativeDir().resolve("libhadoop.so");
    if (!Files.isRegularFile(lib)) {
      return "libhadoop.so not found at "
          + lib
          + ": build with Maven (the unpack-stock-libhadoop execution extracts it from"
          + " io.trino.hadoop:hadoop-apache) and start the JVM with -Djava.library.path="
          + lib.getParent();
    }
    if (!NativeCodeLoader.isNativeCodeLoaded()) {
      return "libhadoop.so exists at "
          + lib
          + " but Hadoop did not load it; java.library.path is '"
          + System.getProperty("java.library.path")
          + "' (it must include "
          + lib.getParent()
          + ", set when the JVM starts)";
    }
    String reason = DomainSocket.getLoadingFailureReason();
    if (reason != null) {
      return "libhadoop loaded but DomainSocket is unavailable: " + reason;
    }
    return null;
  }

  /**
   * Checks that stock short-circuit reads can work and relaxes socket path validation, which
   * rejects the world-writable temporary directories tests use.
   *
   * @throws IllegalStateException naming the reason and the fix when libhadoop is unusable
   */
  public static void requireAvailable() {
    String cause = unavailabilityCause();
    if (cause != null) {
      throw new IllegalStateException("Stock short-circuit reads are unavailable: " + cause);
    }
    DomainSocket.disableBindPathValidation();
  }
}
