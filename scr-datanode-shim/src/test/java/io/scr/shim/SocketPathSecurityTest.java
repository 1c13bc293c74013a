package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.scr.testing.RequiresRoot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.AnnotatedElementContext;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.io.TempDirFactory;

class SocketPathSecurityTest {
  /** Under target/, not /tmp: /tmp is world-writable and would fail every check first. */
  @TempDir(factory = UnderTarget.class)
  Path tmp;

  static final class UnderTarget implements TempDirFactory {
    @Override
    public Path createTempDirectory(AnnotatedElementContext element, ExtensionContext context)
        throws IOException {
      Path target = Files.createDirectories(Paths.get("target").toAbsolutePath());
      return Files.createTempDirectory(target, "pathsec-");
    }
  }

  /** The checks below need a directory whose own ancestors pass; skip where they do not. */
  private Path secureDir() throws IOException {
    Path dir = Files.createDirectory(tmp.resolve("secure"));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwx------"));
    try {
      SocketPathSecurity.check(dir.resolve("dn.sock"), SocketPathSecurity.effectiveUid());
    } catch (SocketPathSecurity.InsecureSocketPathException e) {
      assumeTrue(false, "an ancestor of the temp dir is itself insecure: " + e.getMessage());
    }
    return dir;
  }

  @Test
  void worldWritableDirectoryIsNamedWithTheFix() throws IOException {
    Path dir = secureDir();
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    IOException e =
        assertThrows(
            IOException.class,
            () ->
                SocketPathSecurity.check(
                    dir.resolve("dn.sock"), SocketPathSecurity.effectiveUid()));
    assertTrue(e.getMessage().contains(dir + " is world-writable"), e.getMessage());
    assertTrue(e.getMessage().contains("chmod o-w " + dir), e.getMessage());
  }

  @Test
  void tmpItselfFailsLikeStock() {
    IOException e =
        assertThrows(
            IOException.class, () -> SocketPathSecurity.check(Paths.get("/tmp/dn.sock"), 0));
    assertTrue(e.getMessage().contains("/tmp is world-writable"), e.getMessage());
  }

  @Test
  @RequiresRoot("chown to another user")
  void ownerMustBeRootOrTheDataNodeUser() throws IOException {
    Path dir = secureDir();
    int uid = SocketPathSecurity.effectiveUid();
    assumeTrue(uid == 0, "chown needs root");
    Files.setAttribute(dir, "unix:uid", 4242);
    IOException e =
        assertThrows(IOException.class, () -> SocketPathSecurity.check(dir.resolve("s"), 0));
    assertTrue(e.getMessage().contains("owned by uid 4242"), e.getMessage());
    assertTrue(e.getMessage().contains("chown root " + dir), e.getMessage());
    assertTrue(e.getMessage().contains(ScrShimKeys.SOCKET_PATH.name()), e.getMessage());
    SocketPathSecurity.check(dir.resolve("s"), 4242); // the DataNode user may own it
  }

  @Test
  @RequiresRoot("chgrp to another group")
  void groupWritableByANonRootGroupFails() throws IOException {
    Path dir = secureDir();
    assumeTrue(SocketPathSecurity.effectiveUid() == 0, "chgrp needs root");
    Files.setAttribute(dir, "unix:gid", 4242);
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxr-x"));
    IOException e =
        assertThrows(IOException.class, () -> SocketPathSecurity.check(dir.resolve("s"), 0));
    assertTrue(e.getMessage().contains("chmod g-w " + dir), e.getMessage());
  }

  @Test
  void aTrustedDirectoryIsRefusedOnASecureDataNodeAndSkipsOnlyItsOwnComponents()
      throws IOException {
    Path trusted = Files.createDirectory(tmp.resolve("trusted"));
    Files.setPosixFilePermissions(trusted, PosixFilePermissions.fromString("rwxrwxrwx"));
    SocketPathSecurity.InsecureSocketPathException onKerberos =
        assertThrows(
            SocketPathSecurity.InsecureSocketPathException.class,
            () -> SocketPathSecurity.checkTrustAllowed("TestPlugin", trusted, true));
    assertTrue(
        onKerberos.getMessage().contains("TestPlugin")
            && onKerberos.getMessage().contains(ScrShimPlugin.class.getName()),
        onKerberos.getMessage());
    SocketPathSecurity.checkTrustAllowed("TestPlugin", trusted, false); // an insecure mini cluster
    SocketPathSecurity.checkTrustAllowed(ScrShimPlugin.class.getName(), null, true);

    int uid = SocketPathSecurity.effectiveUid();
    Path own = Files.createDirectory(trusted.resolve("own"));
    Files.setPosixFilePermissions(own, PosixFilePermissions.fromString("rwx------"));
    // The world-writable trusted directory (and everything above) is not judged...
    SocketPathSecurity.check(own.resolve("dn.sock"), uid, trusted);
    // ...but a world-writable directory below it is.
    Files.setPosixFilePermissions(own, PosixFilePermissions.fromString("rwxrwxrwx"));
    SocketPathSecurity.InsecureSocketPathException refused =
        assertThrows(
            SocketPathSecurity.InsecureSocketPathException.class,
            () -> SocketPathSecurity.check(own.resolve("dn.sock"), uid, trusted));
    assertTrue(refused.getMessage().contains(own.toString()), refused.getMessage());
  }

  @Test
  void tooLongAndRelativePathsAreRefused() {
    assertThrows(
        IOException.class, () -> SocketPathSecurity.check(Paths.get("/" + "x".repeat(120)), 0));
    assertThrows(IOException.class, () -> SocketPathSecurity.check(Paths.get("rel/s"), 0));
  }
}
