package io.scr.socketpath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A process's effective uid, read from the {@code Uid:} line of {@code /proc/PID/status} (real,
 * effective, saved, filesystem), which every user may read whatever the process's dumpable state.
 * Not the owner of {@code /proc/PID}: for a non-dumpable process (a DataNode started by jsvc, which
 * changes user after start) kernels before 4.11 report root as the owner of every {@code /proc/PID}
 * entry, so a check using it would take the DataNode user for root. Stateless.
 */
public final class EffectiveUid {
  private EffectiveUid() {}

  /** This process's effective uid. */
  public static int self() throws IOException {
    return ofProcess(Paths.get("/proc/self"));
  }

  /** The effective uid of the process whose {@code /proc} entry is {@code procPidDir}. */
  public static int ofProcess(Path procPidDir) throws IOException {
    return parse(
        new String(Files.readAllBytes(procPidDir.resolve("status")), StandardCharsets.UTF_8));
  }

  /** The effective uid in the text of a {@code /proc/PID/status} file. */
  public static int parse(String status) throws IOException {
    for (String line : status.split("\n", -1)) {
      if (line.startsWith("Uid:")) {
        String[] ids = line.substring(4).trim().split("\\s+");
        if (ids.length >= 2) {
          try {
            return Integer.parseInt(ids[1]);
          } catch (NumberFormatException e) {
            throw new IOException("unreadable Uid line in a /proc status file: " + line, e);
          }
        }
        throw new IOException("unreadable Uid line in a /proc status file: " + line);
      }
    }
    throw new IOException("no Uid line in a /proc status file");
  }
}
