package io.scr.shim;

import io.scr.socketpath.EffectiveUid;
import io.scr.socketpath.SocketPathRules;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Checks the shim's socket path before binding with the HDFS rules ({@code
 * DomainSocket.validateSocketPathSecurity0}), implemented once in scr-socket-path's {@link
 * SocketPathRules} (which {@code scr doctor} uses too): {@code /} and every directory above the
 * socket must be writable by nobody but root or the DataNode user, or anyone able to write one of
 * them could replace the socket and impersonate the DataNode to every client. This class only puts
 * the shim's key into the message. Stateless.
 */
final class SocketPathSecurity {
  /** sizeof(sun_path) - 1 on Linux. */
  static final int MAX_PATH_BYTES = SocketPathRules.MAX_PATH_BYTES;

  private SocketPathSecurity() {}

  /**
   * The DataNode process's effective uid, from {@code /proc/self/status} ({@link EffectiveUid}: not
   * the owner of {@code /proc/self}, which is root for a non-dumpable process such as a DataNode
   * started by jsvc on kernels before 4.11).
   */
  static int effectiveUid() throws IOException {
    return EffectiveUid.self();
  }

  /** The effective uid in the text of a {@code /proc/PID/status} file. */
  static int effectiveUid(String status) throws IOException {
    return EffectiveUid.parse(status);
  }

  /**
   * Refuses a trusted directory (a test build of the plugin, {@link
   * ScrShimPlugin#ScrShimPlugin(java.util.function.UnaryOperator)}) on a secure (Kerberos)
   * DataNode: there the socket is how clients trust that they talk to the DataNode, and a path
   * anyone can write lets them be handed a forged replica. Stock has no such switch outside its
   * tests.
   *
   * @param plugin the plugin class the DataNode was configured with, named in the message
   * @param trustedDir the directory the plugin would not judge, or null (nothing to refuse)
   * @param secure whether Hadoop security (Kerberos) is on ({@code
   *     UserGroupInformation.isSecurityEnabled()})
   */
  static void checkTrustAllowed(String plugin, Path trustedDir, boolean secure)
      throws InsecureSocketPathException {
    if (trustedDir != null && secure) {
      throw new InsecureSocketPathException(
          "dfs.datanode.plugins="
              + plugin
              + " trusts "
              + trustedDir
              + " for tests, which is refused on a secure (Kerberos) DataNode: name "
              + ScrShimPlugin.class.getName()
              + " itself and put the socket in a directory only root and the DataNode user can"
              + " write");
    }
  }

  /**
   * Throws {@link InsecureSocketPathException} naming every offending component and its fix.
   *
   * @param socketPath the effective path ({@code _PORT} already replaced)
   * @param uid the DataNode's effective uid
   */
  static void check(Path socketPath, int uid) throws IOException {
    check(socketPath, uid, null);
  }

  /**
   * As {@link #check(Path, int)}, not judging {@code trustedDir} and its ancestors (null: every
   * component is judged).
   */
  static void check(Path socketPath, int uid, Path trustedDir) throws IOException {
    List<String> problems = SocketPathRules.violations(socketPath, uid, trustedDir);
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
