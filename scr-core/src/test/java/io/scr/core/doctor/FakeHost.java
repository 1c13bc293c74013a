package io.scr.core.doctor;

import io.scr.socketpath.HostFacts;
import io.scr.socketpath.Stat;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * This host's facts, with the owner and mode of chosen paths and the names of chosen uids replaced:
 * a directory "owned by another user" without root. Not thread-safe; built before use.
 */
final class FakeHost implements HostFacts {
  private final Map<Path, Stat> stats = new HashMap<>();
  private final Map<Integer, String> names = new HashMap<>();
  private final Set<Integer> ownersWithoutNames = new HashSet<>();

  /** {@code path} is reported with this mode, owner and group. */
  FakeHost own(Path path, int mode, int uid, int gid) {
    stats.put(path.toAbsolutePath(), new Stat(mode, uid, gid));
    // A made-up owner has no name, whoever this host's user database names with that uid.
    ownersWithoutNames.add(uid);
    return this;
  }

  /** {@code uid} is called {@code name}. */
  FakeHost user(int uid, String name) {
    names.put(uid, name);
    return this;
  }

  @Override
  public Stat stat(Path path) throws IOException {
    Stat s = stats.get(path.toAbsolutePath());
    return s != null ? s : HostFacts.local().stat(path);
  }

  @Override
  public String userName(int uid) {
    if (names.containsKey(uid)) {
      return names.get(uid);
    }
    return ownersWithoutNames.contains(uid) ? null : HostFacts.local().userName(uid);
  }

  @Override
  public OptionalInt uidOf(String name) {
    for (Map.Entry<Integer, String> e : names.entrySet()) {
      if (e.getValue().equals(name)) {
        return OptionalInt.of(e.getKey());
      }
    }
    return HostFacts.local().uidOf(name);
  }
}
