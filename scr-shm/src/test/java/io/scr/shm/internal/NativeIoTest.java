package io.scr.shm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeIoTest {
  @TempDir Path dir;

  @Test
  void probeSucceedsOnLinux() {
    assertNull(NativeIo.unavailabilityCause());
    assertTrue(NativeIo.isAvailable());
  }

  @Test
  void openFileLimitMatchesProcLimits() throws IOException {
    NativeIo.OpenFileLimit limit = NativeIo.openFileLimit();
    String line =
        Files.readAllLines(Paths.get("/proc/self/limits")).stream()
            .filter(l -> l.startsWith("Max open files"))
            .findFirst()
            .orElseThrow(AssertionError::new);
    String[] parts = line.substring("Max open files".length()).trim().split("\\s+", -1);
    assertEquals(parse(parts[0]), limit.soft(), line);
    assertEquals(parse(parts[1]), limit.hard(), line);
    assertTrue(limit.soft() <= limit.hard());
  }

  private static long parse(String value) {
    return "unlimited".equals(value) ? Long.MAX_VALUE : Long.parseLong(value);
  }

  @Test
  void fadviseOnAFileAndOnABadFd() throws IOException {
    Path file = Files.write(dir.resolve("data"), new byte[4096]);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
      int fd = NativeIo.fdNumber(raf.getFD());
      NativeIo.fadvise(fd, 0, 4096, NativeIo.Advice.RANDOM);
      NativeIo.fadvise(fd, 0, 0, NativeIo.Advice.DONTNEED);
    }
    IOException e =
        assertThrows(IOException.class, () -> NativeIo.fadvise(-1, 0, 0, NativeIo.Advice.NORMAL));
    assertTrue(e.getMessage().contains("errno 9"), e.getMessage()); // EBADF
  }

  @Test
  void failedCallsNameTheCallAndErrno() {
    NativeCallException e =
        assertThrows(NativeCallException.class, () -> NativeIo.mmapShared(-1, 4096));
    assertEquals(9, e.errno());
    assertTrue(e.getMessage().startsWith("mmap(fd=-1"), e.getMessage());
    assertThrows(NativeCallException.class, () -> NativeIo.close(-1));
  }
}
