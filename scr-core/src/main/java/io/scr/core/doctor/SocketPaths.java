package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;

/** The socket paths a client on this host would use, {@code _PORT} matched against files. */
final class SocketPaths {
  private SocketPaths() {}

  /** The configured templates ({@code scr.client.socket.paths}, else dfs.domain.socket.path). */
  static List<String> templates(Configuration conf) {
    String explicit = ScrKeys.CLIENT_SOCKET_PATHS.get(conf::get);
    String source = explicit != null ? explicit : ScrKeys.DFS_DOMAIN_SOCKET_PATH.get(conf::get);
    List<String> out = new ArrayList<>();
    for (String p : source.split(",")) {
      if (!p.trim().isEmpty()) {
        out.add(p.trim());
      }
    }
    return out;
  }

  /** The key the templates came from. */
  static String key(Configuration conf) {
    return ScrKeys.CLIENT_SOCKET_PATHS.get(conf::get) != null
        ? ScrKeys.CLIENT_SOCKET_PATHS.name()
        : ScrKeys.DFS_DOMAIN_SOCKET_PATH.name();
  }

  /**
   * Files that exist for {@code template} (one per DataNode for a _PORT template). A directory this
   * user may traverse but not list (0711) is handled as the client does: {@code _PORT} becomes the
   * port of {@code dfs.datanode.address} and that one file is looked at ({@link #unlisted}).
   */
  static List<String> existing(String template, Configuration conf) {
    List<String> out = existing(template);
    String resolved = out.isEmpty() ? unlisted(template, conf) : null;
    if (resolved != null && new File(resolved).exists()) {
      out.add(resolved);
    }
    return out;
  }

  /**
   * The one path a client reads for {@code template} when it cannot list the template's directory
   * (it exists, but this user may not read it: mode 0711 or 0700 owned by another user): {@code
   * _PORT} replaced by the port of {@code dfs.datanode.address}, as the client resolves it. Null
   * when the template has no {@code _PORT}, the directory can be listed or is missing, or the
   * address names no fixed port.
   */
  static String unlisted(String template, Configuration conf) {
    if (!template.contains("_PORT")) {
      return null;
    }
    File dir = new File(template).getParentFile();
    if (dir == null || !dir.exists() || dir.list() != null) {
      return null;
    }
    String address = ScrKeys.DFS_DATANODE_ADDRESS.get(conf::get);
    String port = address == null ? "" : address.substring(address.lastIndexOf(':') + 1).trim();
    if (port.isEmpty() || !port.chars().allMatch(Character::isDigit) || port.equals("0")) {
      return null;
    }
    return template.replace("_PORT", port);
  }

  /** Files that exist for {@code template}, found by listing (one per DataNode for _PORT). */
  static List<String> existing(String template) {
    List<String> out = new ArrayList<>();
    if (!template.contains("_PORT")) {
      if (new File(template).exists()) {
        out.add(template);
      }
      return out;
    }
    File t = new File(template);
    File dir = t.getParentFile();
    String name = t.getName();
    int at = name.indexOf("_PORT");
    String prefix = name.substring(0, at);
    String suffix = name.substring(at + "_PORT".length());
    String[] entries = dir == null ? null : dir.list();
    if (entries == null) {
      return out;
    }
    for (String e : entries) {
      if (e.startsWith(prefix)
          && e.endsWith(suffix)
          && e.length() > prefix.length() + suffix.length()
          && e.substring(prefix.length(), e.length() - suffix.length())
              .chars()
              .allMatch(Character::isDigit)) {
        out.add(new File(dir, e).getPath());
      }
    }
    return out;
  }
}
