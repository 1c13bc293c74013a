package io.scr.socketpath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;

/**
 * Names and uids from a {@code passwd(5)} file. Users known only to a directory service (LDAP,
 * SSSD) are not found: callers then print the bare uid. Reads the file at each lookup; stateless
 * beyond the path.
 */
public final class Users {
  private final Path passwd;

  /** Users listed in {@code passwd} (normally {@code /etc/passwd}). */
  public Users(Path passwd) {
    this.passwd = passwd;
  }

  /** The name of {@code uid}, or null. */
  public String name(int uid) {
    for (String[] f : entries()) {
      if (f[2].equals(Integer.toString(uid))) {
        return f[0];
      }
    }
    return null;
  }

  /** The uid of {@code name}, or empty. */
  public OptionalInt uid(String name) {
    for (String[] f : entries()) {
      if (f[0].equals(name)) {
        try {
          return OptionalInt.of(Integer.parseInt(f[2]));
        } catch (NumberFormatException e) {
          return OptionalInt.empty();
        }
      }
    }
    return OptionalInt.empty();
  }

  private List<String[]> entries() {
    List<String> lines;
    try {
      lines = Files.readAllLines(passwd, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      return List.of();
    }
    List<String[]> out = new java.util.ArrayList<>();
    for (String line : lines) {
      String[] f = line.split(":", -1);
      if (f.length >= 3 && !line.startsWith("#")) {
        out.add(f);
      }
    }
    return out;
  }
}
