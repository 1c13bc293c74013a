package io.scr.core.internal.replica;

import io.scr.shm.internal.NativeIo;
import java.io.FileDescriptor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Which file an open fd refers to: its device and inode, read with {@code stat} through {@code
 * /proc/self/fd/<n>} (the kernel resolves that link to the open file itself, also when the file was
 * unlinked). Two fds of one replica file have the same identity however they were opened; a replica
 * the DataNode moved or replaced has another.
 *
 * <p>Stateless; the fds are borrowed, never closed here.
 */
final class FileIdentity {
  private FileIdentity() {}

  /**
   * Whether {@code a} and {@code b} are open on the same file. False when either is null, closed,
   * or cannot be looked at (never the same by default: a replica that cannot be shown to be the
   * same is treated as changed).
   */
  static boolean same(FileDescriptor a, FileDescriptor b) {
    Object ka = of(a);
    return ka != null && ka.equals(of(b));
  }

  /** The fd's file key ({@code (dev=…,ino=…)} on Linux), or null. */
  static Object of(FileDescriptor fd) {
    if (fd == null || !fd.valid()) {
      return null;
    }
    try {
      return Files.readAttributes(
              Paths.get("/proc/self/fd/" + NativeIo.fdNumber(fd)), BasicFileAttributes.class)
          .fileKey();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
