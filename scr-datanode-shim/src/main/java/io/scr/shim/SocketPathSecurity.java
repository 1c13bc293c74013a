package io.scr.shim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

/**
 * Checks a socket path the way HDFS {@code DomainSocket.validateSocketPathSecurity0} does before
 * binding: {@code /} and every directory above the socket (following symlinks, as {@code stat}
 * does) must be writable by nobody but root or the DataNode user. Otherwise anyone able to write
 * such a directory could replace the socket and impersonate the DataNode to every client.
 *
 * <p>A component fails when it is world-writable (no sticky-bit exemption, so {@code /tmp} fails),
 * group-writable by a group other than root, or owner-writable and owned by neither root nor the
 * DataNode user. The message names the component and the command that fixes it. Stateless.
 */
final class SocketPathSecurity {
  /** sizeof(sun_path) - 1 on Linux. */
  static final int MAX_PATH_BYTES = 107;

  private SocketPathSecurity() {}

  /** The DataNode process's effective uid, as /proc/self shows it. */
  static int effectiveUid() throws IOException {
    return (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
  }

  /**
   * Throws {@link InsecureSocketPathException} naming the first offending component and its fix.
   *
   * @param socketPath the effective path ({@code _PORT} already replaced)
   * @param uid the DataNode's effective uid
   */
  static void check(Path socketPath, int uid) throws IOException {
    String text = socketPath.toString();
    if (text.isEmpty() || text.endsWith("/")) {
      throw new InsecureSocketPathException(
          "invalid shim socket path '" + text + "': it must name a file, not a directory");
    }
    if (!socketPath.isAbsolute()) {
      throw new InsecureSocketPathException(
          "shim socket path '" + text + "' must be absolute (set " + ScrShimKeys.SOCKET_PATH + ")");
    }
    int bytes = text.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_PATH_BYTES) {
      throw new InsecureSocketPathException(
          "shim socket path '"
              + text
              + "' is "
              + bytes
              + " bytes; UNIX socket paths hold at most "
              + MAX_PATH_BYTES
              + ": choose a shorter "
              + ScrShimKeys.SOCKET_PATH);
    }
    Path dir = socketPath.getParent();
    // Check from the root down, like the native code: the first failure is the most useful fix.
    Path current = dir.getRoot();
    checkComponent(socketPath, current, uid);
    for (Path name : dir) {
      current = current.resolve(name);
      checkComponent(socketPath, current, uid);
    }
  }

  private static void checkComponent(Path socketPath, Path component, int uid) throws IOException {
    Map<String, Object> attrs;
    try {
      attrs = Files.readAttributes(component, "unix:mode,uid,gid");
    } catch (IOException e) {
      throw new InsecureSocketPathException(
          "cannot stat "
              + component
              + " on the shim socket path "
              + socketPath
              + " ("
              + e
              + "): create it, owned by root or the DataNode user, mode 0755",
          e);
    }
    int mode = ((Integer) attrs.get("mode")) & 0777;
    int owner = (Integer) attrs.get("uid");
    int group = (Integer) attrs.get("gid");
    String octal = String.format("0%03o", mode);
    String prefix = "the shim socket path " + socketPath + " is insecure: " + component;
    if ((mode & 0002) != 0) {
      throw new InsecureSocketPathException(
          prefix
              + " is world-writable (mode "
              + octal
              + "), so any user could replace the socket. Fix: chmod o-w "
              + component
              + ", or move "
              + ScrShimKeys.SOCKET_PATH
              + " to a directory such as /var/lib/hadoop-hdfs owned by the DataNode user");
    }
    if ((mode & 0020) != 0 && group != 0) {
      throw new InsecureSocketPathException(
          prefix
              + " is group-writable (mode "
              + octal
              + ") by group "
              + group
              + ", which is not root. Fix: chmod g-w "
              + component
              + " (or chgrp root "
              + component
              + ")");
    }
    if ((mode & 0200) != 0 && owner != 0 && owner != uid) {
      throw new InsecureSocketPathException(
          prefix
              + " is owned by uid "
              + owner
              + ", neither root nor the DataNode user (uid "
              + uid
              + "). Fix: chown "
              + uid
              + " "
              + component
              + " (or chown root "
              + component
              + ")");
    }
  }

  /** The socket path fails the security check; the message names the component and the fix. */
  static final class InsecureSocketPathException extends IOException {
    private static final long serialVersionUID = 1L;

    InsecureSocketPathException(String message) {
      super(message);
    }

    InsecureSocketPathException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
