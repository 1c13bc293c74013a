package io.scr.core.doctor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/** The socket exists, is a socket, and its path meets the HDFS security rules. */
final class SocketPathCheck implements Check {
  static final String ID = "socket-path";
  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  @Override
  public String id() {
    return ID;
  }

  @Override
  public List<Finding> run(DoctorContext ctx) {
    List<Finding> out = new ArrayList<>();
    List<String> templates = SocketPaths.templates(ctx.conf());
    if (templates.isEmpty()) {
      out.add(
          Finding.fail(
              ID,
              "no DataNode socket path is configured (dfs.domain.socket.path and"
                  + " scr.client.socket.paths are empty)",
              "set dfs.domain.socket.path in hdfs-site.xml to the DataNode's socket, e.g."
                  + " /var/run/hdfs-sockets/dn._PORT.sock (the same value the DataNode uses)"));
      return out;
    }
    for (String template : templates) {
      List<String> found = SocketPaths.existing(template, ctx.conf());
      // Rules apply to the directories, so the template itself can be checked even when missing.
      Path checked = Paths.get(found.isEmpty() ? template : found.get(0));
      int uid = dataNodeUid(ctx, checked);
      if (uid < 0) {
        out.add(
            Finding.warn(
                ID,
                "the DataNode's user is unknown here (the socket "
                    + template
                    + " cannot be seen by this user and no DataNode process is visible): who may"
                    + " own the directories above the socket was not checked",
                "run scr doctor as the DataNode user, or on this host while the DataNode runs"));
      }
      List<String> violations =
          SocketPathRules.violations(checked, uid, ctx.trustedDirectoryForTests());
      if (!violations.isEmpty()) {
        out.add(
            Finding.fail(
                ID,
                "socket path "
                    + template
                    + " is not secure enough for a DataNode to bind it: "
                    + violations.get(0)
                    + (violations.size() > 1 ? " (and " + (violations.size() - 1) + " more)" : ""),
                String.join("; ", violations)));
      }
      Path parent = Paths.get(template).getParent();
      if (found.isEmpty()
          && parent != null
          && Files.isDirectory(parent)
          && !Files.isExecutable(parent)) {
        // 0700 and not ours: the socket may well be there; this user just cannot reach it.
        out.add(
            Finding.fail(
                ID,
                "socket "
                    + template
                    + " cannot be reached by this user: directory "
                    + parent
                    + " is not traversable for it (permission denied)",
                "clients must traverse (not list) the socket directory: chmod o+x "
                    + parent
                    + " (e.g. mode 0711 or 0755, owned by the DataNode user)"));
        continue;
      }
      if (found.isEmpty()) {
        out.add(
            Finding.fail(
                ID,
                "socket "
                    + template
                    + " does not exist: no DataNode listens there ("
                    + SocketPaths.key(ctx.conf())
                    + ")",
                "start the DataNode with the same dfs.domain.socket.path (stock, with libhadoop)"
                    + " or scr.shim.socket.path (scr shim), check the DataNode log for 'Listening"
                    + " on UNIX domain socket', and make the directory visible to this process"
                    + " (containers: mount it)"));
        continue;
      }
      for (String path : found) {
        try {
          int mode = (Integer) Files.getAttribute(Paths.get(path), "unix:mode");
          if ((mode & S_IFMT) != S_IFSOCK) {
            out.add(
                Finding.fail(
                    ID,
                    path + " exists but is not a socket",
                    "remove it and restart the DataNode, which creates the socket"));
          } else if (violations.isEmpty()) {
            out.add(Finding.ok(ID, path + " is a socket in a secure directory"));
          }
        } catch (IOException e) {
          out.add(Finding.fail(ID, path + " cannot be read: " + e.getMessage(), "check access"));
        }
      }
    }
    return out;
  }

  /** The main class a DataNode process runs ({@code hdfs datanode}). */
  static final String DATANODE_MAIN = "org.apache.hadoop.hdfs.server.datanode.DataNode";

  /**
   * The DataNode's uid: the one given, else the socket's owner, else the owner of a DataNode
   * process on this host, else -1 (unknown). Never this process's own uid: run as a client user the
   * doctor would otherwise name itself as the DataNode user.
   */
  static int dataNodeUid(DoctorContext ctx, Path socket) {
    if (ctx.dataNodeUid() != null) {
      return ctx.dataNodeUid();
    }
    try {
      return (Integer) Files.getAttribute(socket, "unix:uid");
    } catch (IOException | RuntimeException e) {
      return dataNodeProcessUid(ctx.procRoot());
    }
  }

  /** The owner of a process running {@link #DATANODE_MAIN} under {@code proc}, or -1. */
  static int dataNodeProcessUid(Path proc) {
    try (java.util.stream.Stream<Path> pids = Files.list(proc)) {
      for (Path pid : (Iterable<Path>) pids::iterator) {
        if (!pid.getFileName().toString().chars().allMatch(Character::isDigit)) {
          continue;
        }
        try {
          byte[] cmdline = Files.readAllBytes(pid.resolve("cmdline"));
          String args = new String(cmdline, java.nio.charset.StandardCharsets.UTF_8);
          // The main class is one NUL-separated argument of its own.
          if (("\0" + args + "\0").contains("\0" + DATANODE_MAIN + "\0")) {
            return (Integer) Files.getAttribute(pid, "unix:uid");
          }
        } catch (IOException | RuntimeException e) {
          // the process ended, or its command line is hidden from this user
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }
}
