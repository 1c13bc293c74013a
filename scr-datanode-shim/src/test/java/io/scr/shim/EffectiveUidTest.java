package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.scr.testing.RequiresRoot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import jnr.ffi.LibraryLoader;
import org.junit.jupiter.api.Test;

/**
 * The socket path check judges directories against the DataNode's effective uid, read from {@code
 * /proc/self/status}, not from the owner of {@code /proc/self} (root for a non-dumpable process
 * such as a jsvc-started DataNode on kernels before 4.11).
 */
class EffectiveUidTest {
  /** libc's geteuid(2), through jnr-ffi (which scr-shm already loads). */
  public interface Ids {
    int geteuid();
  }

  @Test
  void theEffectiveUidIsTheKernelsGeteuid() throws IOException {
    Ids libc = LibraryLoader.create(Ids.class).load("c");
    assertEquals(libc.geteuid(), SocketPathSecurity.effectiveUid());
  }

  @Test
  void theSecondFieldOfTheUidLineIsTheEffectiveUid() throws IOException {
    String status = "Name:\tjsvc\nUmask:\t0022\nUid:\t0\t996\t996\t996\nGid:\t0\t993\t993\t993\n";
    assertEquals(996, SocketPathSecurity.effectiveUid(status));
    assertThrows(IOException.class, () -> SocketPathSecurity.effectiveUid("Name:\tx\n"));
    assertThrows(IOException.class, () -> SocketPathSecurity.effectiveUid("Uid:\t12\n"));
  }

  @Test
  @RequiresRoot("starts a process as another user")
  void aProcessOfAnotherUserReportsThatUser() throws Exception {
    Ids libc = LibraryLoader.create(Ids.class).load("c");
    assumeTrue(libc.geteuid() == 0, "needs root to start a process as another user");
    assumeTrue(Files.isExecutable(Paths.get("/usr/bin/setpriv")), "needs setpriv");
    Process p =
        new ProcessBuilder(
                "/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/bin/cat",
                "/proc/self/status")
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assumeTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, "setpriv failed: " + out);
    assertEquals(65534, SocketPathSecurity.effectiveUid(out));
  }
}
