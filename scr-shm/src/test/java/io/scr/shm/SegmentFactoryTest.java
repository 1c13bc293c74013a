package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.internal.NativeCallException;
import io.scr.shm.internal.NativeIo;
import java.io.FileDescriptor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXSocketChannel;
import org.newsclub.net.unix.AFUNIXSocketPair;

/** Creator-side fds: memfd (sealed) and the deleted-file fallback, and passing them on. */
class SegmentFactoryTest {
  @TempDir Path dir;

  private static String fdTarget(int fd) throws IOException {
    return Files.readSymbolicLink(Paths.get("/proc/self/fd/" + fd)).toString();
  }

  @Test
  void memfdIsZeroFilledSizedAndSealed() throws IOException {
    assertTrue(ShmSupport.isMemfdAvailable(), () -> "" + ShmSupport.memfdUnavailabilityCause());
    SegmentFactory factory = SegmentFactory.newBuilder().namePrefix("scr-test").build();
    assertEquals("memfd", factory.mechanism());
    try (SharedMemoryFd fd = factory.createFd(8192)) {
      assertTrue(fd.isMemfd());
      assertTrue(fdTarget(fd.fd()).startsWith("/memfd:scr-test"), fdTarget(fd.fd()));
      byte[] bytes = Files.readAllBytes(Paths.get("/proc/self/fd/" + fd.fd()));
      assertEquals(8192, bytes.length);
      assertTrue(allZero(bytes));
      int seals = NativeIo.getSeals(fd.fd());
      assertEquals(NativeIo.F_SEAL_SHRINK | NativeIo.F_SEAL_GROW, seals);
      NativeCallException e =
          assertThrows(NativeCallException.class, () -> NativeIo.ftruncate(fd.fd(), 4096));
      assertEquals(1, e.errno(), "EPERM: the seal forbids shrinking");
    }
  }

  @Test
  void fallbackIsAnUnlinkedZeroFilledFileInTheDirectory() throws IOException {
    SegmentFactory factory =
        SegmentFactory.newBuilder().useMemfd(false).fallbackDirectory(dir).build();
    assertEquals("deleted file in " + dir, factory.mechanism());
    try (SharedMemoryFd fd = factory.createFd(8192)) {
      assertFalse(fd.isMemfd());
      String target = fdTarget(fd.fd());
      assertTrue(target.startsWith(dir.resolve("scr-shm_").toString()), target);
      assertTrue(target.endsWith("(deleted)"), target);
      try (Stream<Path> files = Files.list(dir)) {
        assertEquals(0, files.count(), "unlinked at once");
      }
      byte[] bytes = Files.readAllBytes(Paths.get("/proc/self/fd/" + fd.fd()));
      assertEquals(8192, bytes.length);
      assertTrue(allZero(bytes));
    }
  }

  @Test
  void fallbackDirectoryProblemsNameTheDirectory() {
    Path missing = dir.resolve("missing");
    SegmentFactory factory =
        SegmentFactory.newBuilder().useMemfd(false).fallbackDirectory(missing).build();
    IOException e = assertThrows(IOException.class, () -> factory.createFd(8192));
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("ENOENT") || e.getMessage().contains("errno 2"));
  }

  @Test
  void fdViewsRoundTripAndCloseIsIdempotent() throws IOException {
    SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(4096);
    FileDescriptor view = fd.fileDescriptor();
    assertEquals(fd.fd(), NativeIo.fdNumber(view));
    fd.close();
    fd.close();
    assertTrue(fd.isClosed());
    assertThrows(IllegalStateException.class, fd::fd);
    assertThrows(IOException.class, () -> NativeIo.fdNumber(new FileDescriptor()));
  }

  /** The real hand-over: creator sends the fd over a UNIX socket; the user maps what it got. */
  @Test
  void segmentSentOverAUnixSocketIsSharedWithTheCreator() throws IOException {
    SegmentFactory factory = SegmentFactory.newBuilder().build();
    ShmId id = ShmId.random();
    AFUNIXSocketPair<AFUNIXSocketChannel> pair = AFUNIXSocketPair.open();
    try (AFUNIXSocketChannel creatorEnd = pair.getSocket1();
        AFUNIXSocketChannel userEnd = pair.getSocket2()) {
      Segment creator;
      try (SharedMemoryFd fd = factory.createFd(8192)) {
        creator = Segment.map(id, fd.fd(), 8192);
        creatorEnd.setOutboundFileDescriptors(fd.fileDescriptor());
        creatorEnd.write(ByteBuffer.wrap(new byte[] {0})); // stock: 1 fd + 1 data byte 0x00
      } // the creator closes its fd copy; its mapping stays
      ByteBuffer one = ByteBuffer.allocate(1);
      userEnd.setAncillaryReceiveBufferSize(1024);
      assertEquals(1, userEnd.read(one));
      FileDescriptor[] received = userEnd.getReceivedFileDescriptors();
      assertEquals(1, received.length);
      Segment user = Segment.map(id, received[0], 8192);
      // The user closes its fd copy too: only the two mappings keep the memory alive.
      NativeIo.close(NativeIo.fdNumber(received[0]));
      try (Segment c = creator;
          Segment u = user) {
        u.slot(9).makeValid(); // client allocates slot 9
        Slot registered = c.registerSlot(9, true); // DataNode accepts it
        assertTrue(u.slot(9).isAnchorable());
        assertTrue(u.slot(9).tryAnchor());
        assertEquals(1, registered.anchorCount());
        c.invalidateAll(); // DataNode drops the replica
        assertFalse(u.slot(9).isValid());
      }
    }
  }

  private static boolean allZero(byte[] bytes) {
    for (byte b : bytes) {
      if (b != 0) {
        return false;
      }
    }
    return true;
  }
}
