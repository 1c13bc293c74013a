package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import io.scr.socketpath.EffectiveUid;
import io.scr.socketpath.HostFacts;
import io.scr.socketpath.SocketPathRules;
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
              "no DataNode socket path is configured ("
                  + ScrKeys.DFS_DOMAIN_SOCKET_PATH.name()
                  + " and"
                  + " "
                  + ScrKeys.CLIENT_SOCKET_PATHS.name()
                  + " are empty)",
              "set "
                  + ScrKeys.DFS_DOMAIN_SOCKET_PATH.name()
                  + " in hdfs-site.xml to the DataNode's socket, e.g."
                  + " /var/run/hdfs-sockets/dn._PORT.sock (the same value the DataNode uses)"));
      return out;
    }
    for (String template : templates) {
      List<String> found = SocketPaths.existing(template, ctx.conf());
      String unlisted = SocketPaths.unlisted(template, ctx.conf());
      // The path the client really uses: a socket found, else the template as the client resolves
      // it in a directory it cannot list, else the template (its directories are what is judged).
      String expected = !found.isEmpty() ? found.get(0) : unlisted != null ? unlisted : template;
      String shown =
          expected.equals(template)
              ? template
              : expected
                  + " ("
                  + template
                  + (unlisted != null
                      ? " with _PORT = the port of "
                          + ScrKeys.DFS_DATANODE_ADDRESS.name()
                          + ", as a client that cannot list the directory resolves it)"
                      : ")");
      Path checked = Paths.get(expected);
      DataNodeUser dataNode = dataNodeUser(ctx, found);
      HostFacts host = ctx.hostFacts();
      if (dataNode.uid < 0) {
        out.add(
            Finding.warn(
                ID,
                "the DataNode's user is unknown here (no socket of "
                    + shown
                    + " can be seen by this user and no DataNode process is visible): who may"
                    + " own the directories above the socket was not checked"
                    + ownerOf(host, checked.getParent()),
                "give it: scr doctor --datanode-user USER (the user the DataNode runs as), or run"
                    + " scr doctor on this host while the DataNode runs"));
      }
      List<String> violations =
          SocketPathRules.violations(checked, dataNode.uid, ctx.trustedDirectoryForTests(), host);
      if (!violations.isEmpty()) {
        out.add(
            Finding.fail(
                ID,
                "socket path "
                    + shown
                    + " is not secure enough for a DataNode"
                    + dataNode.described(host)
                    + " to bind it: "
                    + violations.get(0)
                    + (violations.size() > 1 ? " (and " + (violations.size() - 1) + " more)" : ""),
                String.join("; ", violations)));
      }
      Path parent = checked.getParent();
      if (found.isEmpty()
          && parent != null
          && Files.isDirectory(parent)
          && !Files.isExecutable(parent)) {
        // 0700 and not ours: the socket may well be there; this user just cannot reach it.
        out.add(
            Finding.fail(
                ID,
                "socket "
                    + shown
                    + " cannot be reached by this user: directory "
                    + parent
                    + " is not traversable for it (permission denied)",
                "clients must traverse (not list) the socket directory: chmod o+x "
                    + parent
                    + " (mode 0711 or 0755), keeping its owner (the DataNode user creates the"
                    + " socket in it)"));
        continue;
      }
      if (found.isEmpty()) {
        out.add(
            Finding.fail(
                ID,
                "socket "
                    + shown
                    + " does not exist: no DataNode listens there ("
                    + SocketPaths.key(ctx.conf())
                    + ")",
                "start the DataNode with the same "
                    + ScrKeys.DFS_DOMAIN_SOCKET_PATH.name()
                    + " (stock, with libhadoop)"
                    + " or scr.shim.socket.path (scr shim), check the DataNode log for 'Listening"
                    + " on UNIX domain socket', and make the directory visible to this process"
                    + " (containers: mount it)"
                    + (unlisted != null
                        ? "; if the DataNode's transfer port is not the one "
                            + ScrKeys.DFS_DATANODE_ADDRESS.name()
                            + " names here, set it to the DataNode's, or list the socket in "
                            + ScrKeys.CLIENT_SOCKET_PATHS.name()
                        : "")));
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

  /** The main class of a secure DataNode started by jsvc, which changes user after start. */
  static final String SECURE_DATANODE_MAIN =
      "org.apache.hadoop.hdfs.server.datanode.SecureDataNodeStarter";

  /** The DataNode's uid (-1: unknown) and where it was learnt. */
  static final class DataNodeUser {
    final int uid;
    final String source;

    DataNodeUser(int uid, String source) {
      this.uid = uid;
      this.source = source;
    }

    /** " (uid 994 (hdfs), the socket's owner)", or "" when unknown. */
    String described(HostFacts host) {
      return uid < 0 ? "" : " (" + host.describeUid(uid) + ", " + source + ")";
    }
  }

  /**
   * The DataNode's user: the one given ({@code --datanode-user}), else the owner of a socket it
   * bound, else the effective uid of a DataNode process on this host, else unknown (uid -1). Never
   * this process's own uid, nor root by default: run as a client user the doctor would otherwise
   * name itself or root as the DataNode user and print a {@code chown} that locks the DataNode out.
   */
  static DataNodeUser dataNodeUser(DoctorContext ctx, List<String> sockets) {
    if (ctx.dataNodeUid() != null) {
      return new DataNodeUser(ctx.dataNodeUid(), "given with --datanode-user");
    }
    for (String socket : sockets) {
      try {
        return new DataNodeUser(
            ctx.hostFacts().stat(Paths.get(socket)).uid(), "the owner of " + socket);
      } catch (IOException e) {
        // not visible to this user; try the next
      }
    }
    int process = dataNodeProcessUid(ctx.procRoot());
    return process >= 0
        ? new DataNodeUser(process, "the user of the DataNode process on this host")
        : new DataNodeUser(-1, "unknown");
  }

  /** "; DIR is owned by uid 994 (hdfs)" for the unknown-user warning, or "". */
  private static String ownerOf(HostFacts host, Path dir) {
    if (dir == null) {
      return "";
    }
    try {
      return "; "
          + dir
          + " is owned by "
          + host.describeUid(host.stat(dir).uid())
          + ", which is right if that is the DataNode user";
    } catch (IOException e) {
      return "";
    }
  }

  /**
   * The effective uid of a process running {@link #DATANODE_MAIN} under {@code proc} (from its
   * {@code status}, not the owner of its directory, which is root for a DataNode that changed user
   * after start, as jsvc does), or -1.
   */
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
          String padded = "\0" + args + "\0";
          if (padded.contains("\0" + DATANODE_MAIN + "\0")
              || padded.contains("\0" + SECURE_DATANODE_MAIN + "\0")) {
            return EffectiveUid.ofProcess(pid);
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
