package io.scr.reliability;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The DataNode's shared-memory directory of scenario 7, put into the states the issue names:
 * missing, unwritable, full. Honest means that the directory really is what it says for the
 * DataNode's process, which here is the test JVM and often root:
 *
 * <ul>
 *   <li><b>unwritable</b>: for root, permission bits do not stop a write (CAP_DAC_OVERRIDE), so the
 *       directory is a tmpfs mounted read-only ({@code EROFS} even for root); without root it is a
 *       directory with mode 0555 ({@code EACCES});
 *   <li><b>full</b>: a 4 KiB tmpfs. A DataNode's start-up probe (a 1-byte file) fits, an 8 KiB
 *       segment never does ({@code ENOSPC} on the zero-filling write, as on a full /dev/shm);
 *       mounting needs root with CAP_SYS_ADMIN;
 *   <li><b>missing</b>: the path does not exist.
 * </ul>
 *
 * <p>A state the environment cannot produce is reported by {@link #unavailableReason} so the test
 * can skip it with the reason instead of pretending. Mounts are undone by {@link #reset} and, if
 * the JVM exits first, by a shutdown hook. Not thread-safe.
 */
final class ShmDir {
  private final Path dir;
  private boolean mounted;

  ShmDir(Path dir) {
    this.dir = dir;
    Runtime.getRuntime()
        .addShutdownHook(new Thread(this::resetQuietly, "shm-dir-reset-" + dir.getFileName()));
  }

  /** A fresh path under /tmp, outside the build directory (a stale mount must not block clean). */
  static ShmDir create(String name) {
    return new ShmDir(Paths.get("/tmp", name + "-" + ProcessHandle.current().pid()));
  }

  Path path() {
    return dir;
  }

  static boolean isRoot() {
    try {
      return "0".equals(run("id", "-u").trim());
    } catch (IOException e) {
      return false;
    }
  }

  /** Why {@code state} cannot be produced here, or null if it can. */
  static String unavailableReason(String state) {
    boolean root = isRoot();
    if ("unwritable".equals(state) && !root) {
      return null;
    }
    if (!root) {
      return "a " + state + " tmpfs needs root (the build runs as another user)";
    }
    Path probe = Paths.get("/tmp", "scr-mount-probe-" + ProcessHandle.current().pid());
    try {
      Files.createDirectories(probe);
      try {
        run("mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", probe.toString());
      } catch (IOException e) {
        return "cannot mount a tmpfs here (" + e.getMessage() + ")";
      }
      run("umount", probe.toString());
      return null;
    } catch (IOException e) {
      return "cannot probe for tmpfs mounts: " + e.getMessage();
    } finally {
      try {
        Files.deleteIfExists(probe);
      } catch (IOException e) {
        // a probe directory in /tmp
      }
    }
  }

  /** The directory exists and nothing can create a file in it. */
  void makeUnwritable() throws IOException {
    reset();
    Files.createDirectories(dir);
    if (isRoot()) {
      run("mount", "-t", "tmpfs", "-o", "ro,size=4k", "tmpfs", dir.toString());
      mounted = true;
    } else {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("r-xr-xr-x"));
    }
  }

  /** A 4 KiB tmpfs: a 1-byte probe fits, an 8 KiB segment does not. */
  void makeFull() throws IOException {
    reset();
    Files.createDirectories(dir);
    run("mount", "-t", "tmpfs", "-o", "size=4k,mode=0755", "tmpfs", dir.toString());
    mounted = true;
  }

  /** Back to missing: unmounted and deleted. */
  void reset() throws IOException {
    if (mounted) {
      run("umount", dir.toString());
      mounted = false;
    }
    if (Files.isDirectory(dir)) {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      Files.delete(dir);
    }
  }

  private void resetQuietly() {
    try {
      reset();
    } catch (IOException e) {
      System.err.println("could not reset " + dir + ": " + e.getMessage());
    }
  }

  private static String run(String... cmd) throws IOException {
    List<String> command = new ArrayList<>(Arrays.asList(cmd));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try (InputStream in = p.getInputStream()) {
      String out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(String.join(" ", cmd) + " did not finish");
      }
      if (p.exitValue() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed: " + out.trim());
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted running " + String.join(" ", cmd), e);
    }
  }
}
