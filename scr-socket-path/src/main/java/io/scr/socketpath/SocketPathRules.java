package io.scr.socketpath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The HDFS socket-path security rules ({@code DomainSocket.validateSocketPathSecurity0}), in Java:
 * {@code /} and every directory above the socket (following symlinks, as {@code stat} does) must be
 * writable by nobody but root or the DataNode user. A component fails when it is world-writable (no
 * sticky-bit exemption, so {@code /tmp} fails), group-writable by a group other than root, or
 * owner-writable and owned by neither root nor the DataNode user. A DataNode uid below 0 means
 * unknown: the ownership rule is then not judged. The socket itself is not checked (the DataNode
 * makes it 0666; access is controlled by its directory). The path may hold at most {@value
 * #MAX_PATH_BYTES} bytes ({@code sun_path}).
 *
 * <p>Each violation names a fix that cannot break the host: a shared directory such as {@code /tmp}
 * (world-writable with the sticky bit) or an ancestor of the socket's own directory (a home, {@code
 * /var}) is never to be chmod-ed or chown-ed; the fix is to move the socket to a directory of its
 * own. Only the socket's own directory is given a {@code chmod}/{@code chown}, and a {@code chown}
 * only ever to the DataNode user (to root would lock a non-root DataNode out of its own directory).
 *
 * <p>The single implementation of these rules in scr: {@code scr doctor} and the DataNode shim use
 * it. The facts (owners, modes, user names) come from a {@link HostFacts}, the real host unless a
 * test gives its own. Stateless.
 */
public final class SocketPathRules {
  /** {@code sizeof(sun_path) - 1} on Linux. */
  public static final int MAX_PATH_BYTES = 107;

  private SocketPathRules() {}

  /**
   * Every violation of the rules by {@code socketPath} for a DataNode running as {@code
   * dataNodeUid}, each naming the component and the command that fixes it; empty when the path is
   * acceptable. Components that do not exist are reported too (the DataNode cannot bind there).
   */
  public static List<String> violations(Path socketPath, int dataNodeUid) {
    return violations(socketPath, dataNodeUid, null);
  }

  /**
   * Like {@link #violations(Path, int)}, but {@code trustedDirectory} and its ancestors are not
   * checked — the counterpart of stock's {@code skipComponents}, for tests only: build directories
   * sit below world-writable {@code /tmp} on many machines. Null checks every component.
   */
  public static List<String> violations(Path socketPath, int dataNodeUid, Path trustedDirectory) {
    return violations(socketPath, dataNodeUid, trustedDirectory, HostFacts.local());
  }

  /** Like {@link #violations(Path, int, Path)}, judged on the facts {@code host} gives. */
  public static List<String> violations(
      Path socketPath, int dataNodeUid, Path trustedDirectory, HostFacts host) {
    List<String> out = new ArrayList<>();
    String text = socketPath.toString();
    if (!socketPath.isAbsolute() || text.endsWith("/")) {
      out.add("'" + text + "' must be an absolute path naming a file");
      return out;
    }
    int bytes = text.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_PATH_BYTES) {
      out.add(
          "'"
              + text
              + "' is "
              + bytes
              + " bytes; UNIX socket paths hold at most "
              + MAX_PATH_BYTES
              + ": choose a shorter path");
    }
    List<Path> dirs = new ArrayList<>();
    for (Path d = socketPath.getParent(); d != null; d = d.getParent()) {
      dirs.add(0, d);
    }
    Path own = socketPath.getParent();
    for (Path dir : dirs) {
      if (trustedDirectory != null && trustedDirectory.startsWith(dir)) {
        continue;
      }
      Stat stat;
      try {
        stat = host.stat(dir);
      } catch (IOException e) {
        out.add(
            "directory "
                + dir
                + " cannot be read ("
                + e.getMessage()
                + "): create it, owned by the DataNode user, mode 0755");
        break;
      }
      int mode = stat.mode();
      int uid = stat.uid();
      int gid = stat.gid();
      String m = stat.octalMode();
      boolean sticky = (mode & 01000) != 0;
      // Shared directories and ancestors are not the operator's to change for HDFS.
      boolean mayChange = dir.equals(own) && !sticky;
      if ((mode & 0002) != 0) {
        out.add(
            dir
                + " is world-writable (mode "
                + m
                + (sticky
                    ? ", sticky: a shared directory like /tmp; HDFS's check rejects it all the same,"
                        + " and its mode must stay as it is"
                    : "")
                + "): anyone could replace the socket. "
                + (mayChange ? "Run: chmod o-w " + dir + " (or put" : "Put")
                + " the socket in a directory of its own such as /var/run/hdfs-sockets, owned by"
                + " the DataNode user, mode 0755"
                + (mayChange ? ")" : ""));
      }
      if ((mode & 0020) != 0 && gid != 0) {
        out.add(
            dir
                + " is group-writable by gid "
                + gid
                + " (mode "
                + m
                + "), a group other than root. "
                + (mayChange
                    ? "Run: chmod g-w " + dir
                    : "Put the socket in a directory of its own such as /var/run/hdfs-sockets,"
                        + " owned by the DataNode user, mode 0755"));
      }
      if ((mode & 0200) != 0 && uid != 0 && dataNodeUid >= 0 && uid != dataNodeUid) {
        out.add(
            dir
                + " is owned by "
                + host.describeUid(uid)
                + ", neither root nor the DataNode user, "
                + host.describeUid(dataNodeUid)
                + ". "
                + (mayChange
                    ? "Run: chown " + chownName(host, dataNodeUid) + " " + dir
                    : "Put the socket in a directory of its own such as /var/run/hdfs-sockets,"
                        + " owned by the DataNode user, mode 0755"));
      }
    }
    return out;
  }

  /** The DataNode user as {@code chown} takes it: the name when known, else the uid. */
  private static String chownName(HostFacts host, int uid) {
    String name = host.userName(uid);
    return name != null ? name : Integer.toString(uid);
  }
}
