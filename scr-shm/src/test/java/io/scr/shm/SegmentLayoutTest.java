package io.scr.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** Pins the slot layout to bytes, as a stock DataNode and DFSClient see it. */
class SegmentLayoutTest {
  private final SegmentFactory factory = SegmentFactory.newBuilder().build();

  /** The raw bytes of the shared file, read through the fd as another process would see them. */
  private static byte[] fileBytes(SharedMemoryFd fd) throws IOException {
    return Files.readAllBytes(Paths.get("/proc/self/fd/" + fd.fd()));
  }

  private static byte[] slotBytes(byte[] file, int index) {
    byte[] out = new byte[64];
    System.arraycopy(file, index * 64, out, 0, 64);
    return out;
  }

  @Test
  void constantsMatchShortCircuitShm() {
    assertEquals(0x8000_0000_0000_0000L, Slot.VALID_FLAG);
    assertEquals(0x4000_0000_0000_0000L, Slot.ANCHORABLE_FLAG);
    assertEquals(0x7fff_ffffL, Slot.ANCHOR_COUNT_MASK);
    assertEquals(64, Slot.BYTES_PER_SLOT);
    assertEquals(8192, SegmentFactory.STOCK_SEGMENT_LENGTH);
  }

  @Test
  void word0IsNativeOrderLittleEndianWithFlagsInTheTopByte() throws IOException {
    try (SharedMemoryFd fd = factory.createFd(8192);
        Segment segment = Segment.map(ShmId.random(), fd.fd(), 8192)) {
      assertEquals(128, segment.slotCount());
      Slot slot = segment.slot(3);
      slot.makeValid();
      slot.makeAnchorable();
      assertEquals(true, slot.tryAnchor());
      assertEquals(true, slot.tryAnchor());

      byte[] file = fileBytes(fd);
      assertEquals(8192, file.length);
      byte[] expected = new byte[64];
      expected[0] = 2; // anchor count, low byte first
      expected[7] = (byte) 0xC0; // VALID | ANCHORABLE in the most significant byte
      assertArrayEquals(expected, slotBytes(file, 3));
      // Neighbours and padding untouched.
      assertArrayEquals(new byte[64], slotBytes(file, 2));
      assertArrayEquals(new byte[64], slotBytes(file, 4));

      slot.makeInvalid();
      expected[7] = (byte) 0x40;
      assertArrayEquals(expected, slotBytes(fileBytes(fd), 3));
      assertEquals(0x4000_0000_0000_0002L, slot.loadVolatile());
    }
  }

  @Test
  void bytesWrittenByThePeerAreReadAsTheStockWord() throws IOException {
    try (SharedMemoryFd fd = factory.createFd(8192);
        Segment creator = Segment.map(ShmId.of(1, 2), fd.fd(), 8192);
        Segment user = Segment.map(ShmId.of(1, 2), fd.fileDescriptor(), 8192)) {
      // The creator sets VALID|ANCHORABLE and count 5 on slot 127, the last one.
      creator.slot(127).storeVolatile(Slot.VALID_FLAG | Slot.ANCHORABLE_FLAG | 5);
      Slot seen = user.slot(127);
      assertEquals(true, seen.isValid());
      assertEquals(true, seen.isAnchorable());
      assertEquals(5, seen.anchorCount());
      byte[] file = fileBytes(fd);
      assertEquals(5, file[127 * 64]);
      assertEquals((byte) 0xC0, file[127 * 64 + 7]);
      // The user invalidates; the creator sees it.
      user.invalidateAll();
      assertEquals(false, creator.slot(127).isValid());
    }
  }

  @Test
  void lengthIsRoundedDownToWholeSlots() throws IOException {
    try (SharedMemoryFd fd = factory.createFd(8192)) {
      try (Segment segment = Segment.map(ShmId.random(), fd.fd(), 8192 - 1)) {
        assertEquals(127, segment.slotCount());
        assertEquals(127 * 64, segment.length());
      }
      assertThrows(IOException.class, () -> Segment.map(ShmId.random(), fd.fd(), 63));
    }
  }
}
