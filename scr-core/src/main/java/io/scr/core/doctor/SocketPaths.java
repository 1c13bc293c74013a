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
    String explicit = ScrKeys.CLIENT_SOCKET_PATHS.get(conf);
    String source = explicit != null ? explicit : ScrKeys.DFS_DOMAIN_SOCKET_PATH.get(conf);
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
    return ScrKeys.CLIENT_SOCKET_PATHS.get(conf) != null
        ? ScrKeys.CLIENT_SOCKET_PATHS.name()
        : ScrKeys.DFS_DOMAIN_SOCKET_PATH.name();
  }

  /**
   * Files that exist for {@code template} (one per DataNode for a _PORT template). A directory this
   * user may traverse but not list (0711) is handled as the client does: {@code _PORT} becomes the
   * port of {@code dfs.datanode.address} and that one file is looked at.
   */
  static List<String> existing(String template, Configuration conf) {
    List<String> out = existing(template);
    if (out.isEmpty() && template.contains("_PORT")) {
      File dir = new File(template).getParentFile();
      if (dir != null && dir.exists() && dir.list() == null) {
        String address = ScrKeys.DFS_DATANODE_ADDRESS.get(conf);
        String port = address == null ? "" : address.substring(address.lastIndexOf(':') + 1).trim();
        if (!port.isEmpty() && port.chars().allMatch(Character::isDigit) && !port.equals("0")) {
          String resolved = template.replace("_PORT", port);
          if (new File(resolved).exists()) {
            out.add(resolved);
          }
        }
      }
    }
    return out;
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
