package io.scr.socketpath;

import java.util.Locale;

/**
 * What {@code stat(2)} says about one path: permission bits (with set-id and sticky), owner, group.
 */
public final class Stat {
  private final int mode;
  private final int uid;
  private final int gid;

  /**
   * @param mode the permission bits, {@code 07777} of {@code st_mode} (higher bits are dropped)
   * @param uid the owner's uid
   * @param gid the group's gid
   */
  public Stat(int mode, int uid, int gid) {
    this.mode = mode & 07777;
    this.uid = uid;
    this.gid = gid;
  }

  /** The permission bits, with set-id and sticky ({@code 07777}). */
  public int mode() {
    return mode;
  }

  /** The owner's uid. */
  public int uid() {
    return uid;
  }

  /** The group's gid. */
  public int gid() {
    return gid;
  }

  /** The mode as four octal digits, e.g. {@code 0755} or {@code 1777}. */
  public String octalMode() {
    return String.format(Locale.ROOT, "%04o", mode);
  }

  @Override
  public String toString() {
    return "mode " + octalMode() + ", uid " + uid + ", gid " + gid;
  }
}
