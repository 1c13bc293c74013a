package io.scr.shim;

import io.scr.core.doctor.SocketPathRules;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

/**
 * Checks the shim's socket path before binding with the HDFS rules ({@code
 * DomainSocket.validateSocketPathSecurity0}), implemented once in scr-core's {@link
 * SocketPathRules} (which {@code scr doctor} uses too): {@code /} and every directory above the
 * socket must be writable by nobody but root or the DataNode user, or anyone able to write one of
 * them could replace the socket and impersonate the DataNode to every client. This class only puts
 * the shim's key into the message. Stateless.
 */
final class SocketPathSecurity {
  /** sizeof(sun_path) - 1 on Linux. */
  static final int MAX_PATH_BYTES = SocketPathRules.MAX_PATH_BYTES;

  private SocketPathSecurity() {}

  /** The DataNode process's effective uid, as /proc/self shows it. */
  static int effectiveUid() throws IOException {
    return (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
  }

  /**
   * Throws {@link InsecureSocketPathException} naming every offending component and its fix.
   *
   * @param socketPath the effective path ({@code _PORT} already replaced)
   * @param uid the DataNode's effective uid
   */
  static void check(Path socketPath, int uid) throws IOException {
    List<String> problems = SocketPathRules.violations(socketPath, uid);
    if (!problems.isEmpty()) {
      throw new InsecureSocketPathException(
          "the shim socket path "
              + socketPath
              + " ("
              + ScrShimKeys.SOCKET_PATH
              + ") is insecure or unusable: "
              + String.join("; ", problems));
    }
  }

  /** The socket path fails the security check; the message names the components and the fixes. */
  static final class InsecureSocketPathException extends IOException {
    private static final long serialVersionUID = 1L;

    InsecureSocketPathException(String message) {
      super(message);
    }
  }
}
