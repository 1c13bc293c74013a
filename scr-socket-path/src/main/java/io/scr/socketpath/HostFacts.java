package io.scr.socketpath;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.OptionalInt;

/**
 * The facts of this host that socket-path rules are judged by: {@code stat(2)} of a path (following
 * symlinks, as HDFS's check does) and the user database. {@link #local()} reads the real ones;
 * tests give their own, so the judging of directories owned by other users can be checked without
 * root.
 */
public interface HostFacts {
  /** {@code stat(2)} of {@code path}, following symlinks. */
  Stat stat(Path path) throws IOException;

  /** The name of the user with {@code uid}, or null when the user database has none. */
  String userName(int uid);

  /** The uid of the user named {@code name}, or empty when the user database has none. */
  OptionalInt uidOf(String name);

  /** {@code uid} for messages: {@code "uid 994 (hdfs)"}, or {@code "uid 4343"} when unnamed. */
  default String describeUid(int uid) {
    String name = userName(uid);
    return name == null ? "uid " + uid : "uid " + uid + " (" + name + ")";
  }

  /**
   * This host: {@code stat} through {@code unix:} file attributes, users from {@code /etc/passwd}.
   */
  static HostFacts local() {
    return Local.INSTANCE;
  }

  /** The real host. Stateless: {@code /etc/passwd} is read at each lookup (lookups are rare). */
  final class Local implements HostFacts {
    static final Local INSTANCE = new Local();
    private final Users users = new Users(Paths.get("/etc/passwd"));

    private Local() {}

    @Override
    public Stat stat(Path path) throws IOException {
      try {
        return new Stat(
            (Integer) Files.getAttribute(path, "unix:mode"),
            (Integer) Files.getAttribute(path, "unix:uid"),
            (Integer) Files.getAttribute(path, "unix:gid"));
      } catch (UnsupportedOperationException | IllegalArgumentException e) {
        throw new IOException("no unix file attributes on this platform: " + e.getMessage(), e);
      }
    }

    @Override
    public String userName(int uid) {
      return users.name(uid);
    }

    @Override
    public OptionalInt uidOf(String name) {
      return users.uid(name);
    }
  }
}
