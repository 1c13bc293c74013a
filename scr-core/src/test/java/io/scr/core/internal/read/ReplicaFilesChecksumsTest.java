package io.scr.core.internal.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.ChecksumException;
import org.junit.jupiter.api.Test;

/**
 * Where a replica keeps its checksums: a meta file of at most {@link
 * ReplicaFiles#HEAP_SUMS_MAX_BYTES} is copied into the heap at open (no mapping, no fd), a larger
 * one mapped; both verify reads, and only a mapping counts against the process's mappings.
 */
class ReplicaFilesChecksumsTest {
  private static final int BPC = 512;

  /** Meta bytes for {@code chunks} CRC32C checksums: 7 + 4 per chunk. */
  private static int metaBytes(int chunks) {
    return MetaHeader.HEADER_BYTES + 4 * chunks;
  }

  private static Path write(byte[] data) throws IOException {
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
    Files.createDirectories(tmp);
    Path dir = Files.createTempDirectory(tmp, "sums");
    Files.write(dir.resolve("blk"), data);
    ByteBuffer meta = ByteBuffer.allocate(metaBytes((data.length + BPC - 1) / BPC));
    meta.putShort((short) 1).put((byte) MetaHeader.TYPE_CRC32C).putInt(BPC);
    for (int off = 0; off < data.length; off += BPC) {
      CRC32C c = new CRC32C();
      c.update(data, off, Math.min(BPC, data.length - off));
      meta.putInt((int) c.getValue());
    }
    Files.write(dir.resolve("blk.meta"), meta.array());
    return dir;
  }

  private static ReplicaFiles open(Path dir) throws IOException {
    return ReplicaFiles.open(
        FileChannel.open(dir.resolve("blk")),
        FileChannel.open(dir.resolve("blk.meta")),
        "BP-1:blk_9_1");
  }

  private static byte[] random(int n) {
    byte[] b = new byte[n];
    new Random(n).nextBytes(b);
    return b;
  }

  private static boolean mapped(Path file) throws IOException {
    String name = file.toString();
    for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
      if (line.endsWith(name) || line.endsWith(name + " (deleted)")) {
        return true;
      }
    }
    return false;
  }

  private static void readFully(LocalBlockReader reader, ReplicaFiles f, long off, byte[] b)
      throws IOException {
    int done = 0;
    while (done < b.length) {
      int n =
          reader.read(
              f,
              off + done,
              ByteBuffer.wrap(b, done, b.length - done),
              true,
              "/f",
              new ReadContext(4096));
      assertTrue(n > 0, "read " + done + " of " + b.length + " bytes at " + off);
      done += n;
    }
  }

  /**
   * A meta channel that counts its positional reads; what {@link ReplicaFiles#open} does not call
   * fails.
   */
  private static final class CountingChannel extends FileChannel {
    final FileChannel in;
    int preads;

    CountingChannel(FileChannel in) {
      this.in = in;
    }

    private static UnsupportedOperationException unused() {
      return new UnsupportedOperationException("ReplicaFiles.open does not call this");
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
      preads++;
      return in.read(dst, position);
    }

    @Override
    public long size() throws IOException {
      return in.size();
    }

    @Override
    public java.nio.MappedByteBuffer map(MapMode mode, long position, long size)
        throws IOException {
      return in.map(mode, position, size);
    }

    @Override
    protected void implCloseChannel() throws IOException {
      in.close();
    }

    @Override
    public int read(ByteBuffer dst) {
      throw unused();
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) {
      throw unused();
    }

    @Override
    public int write(ByteBuffer src) {
      throw unused();
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) {
      throw unused();
    }

    @Override
    public int write(ByteBuffer src, long position) {
      throw unused();
    }

    @Override
    public long position() {
      throw unused();
    }

    @Override
    public FileChannel position(long newPosition) {
      throw unused();
    }

    @Override
    public FileChannel truncate(long size) {
      throw unused();
    }

    @Override
    public void force(boolean metaData) {
      throw unused();
    }

    @Override
    public long transferTo(long position, long count, java.nio.channels.WritableByteChannel t) {
      throw unused();
    }

    @Override
    public long transferFrom(java.nio.channels.ReadableByteChannel src, long position, long n) {
      throw unused();
    }

    @Override
    public java.nio.channels.FileLock lock(long position, long size, boolean shared) {
      throw unused();
    }

    @Override
    public java.nio.channels.FileLock tryLock(long position, long size, boolean shared) {
      throw unused();
    }
  }

  @Test
  void aSmallMetaFileIsReadWithOnePread() throws IOException {
    byte[] data = random(8 << 10);
    Path dir = write(data);
    CountingChannel meta = new CountingChannel(FileChannel.open(dir.resolve("blk.meta")));
    try (ReplicaFiles f =
        ReplicaFiles.open(FileChannel.open(dir.resolve("blk")), meta, "BP-1:blk_9_1")) {
      assertEquals(1, meta.preads, "the one pread returned the whole meta file");
      byte[] got = new byte[data.length];
      readFully(new LocalBlockReader(), f, 0, got);
      assertArrayEquals(data, got);
    }
  }

  @Test
  void aTruncatedMetaFileIsReadToItsEndAndItsMissingChecksumsFailReads() throws IOException {
    byte[] data = random(8 << 10);
    Path dir = write(data);
    Path metaFile = dir.resolve("blk.meta");
    byte[] meta = Files.readAllBytes(metaFile);
    Files.write(metaFile, Arrays.copyOf(meta, metaBytes(8))); // half the chunks' checksums
    CountingChannel counting = new CountingChannel(FileChannel.open(metaFile));
    try (ReplicaFiles f =
        ReplicaFiles.open(FileChannel.open(dir.resolve("blk")), counting, "BP-1:blk_9_1")) {
      assertEquals(2, counting.preads, "read on until the end of the short file");
      byte[] first = new byte[8 * BPC];
      readFully(new LocalBlockReader(), f, 0, first);
      assertArrayEquals(Arrays.copyOf(data, first.length), first);
      assertThrows(
          IOException.class,
          () ->
              new LocalBlockReader()
                  .read(
                      f,
                      12 * BPC,
                      ByteBuffer.wrap(new byte[BPC], 0, BPC),
                      true,
                      "/f",
                      new ReadContext(4096)));
    }
  }

  @Test
  void aSmallMetaFileIsCopiedNotMappedAndStillVerifiesReads() throws Exception {
    // 1022 chunks: a meta file of 4095 bytes, the largest CRC32C one under the limit.
    byte[] data = random(1022 * BPC - 100);
    assertEquals(4095, metaBytes(1022));
    Path dir = write(data);
    int liveBefore = ChecksumMappings.live();
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f = open(dir)) {
      assertNotNull(f.sumsInMemory(), "the checksums are in memory");
      assertNull(f.mappedSums(), "a meta file of 4095 bytes is not mapped");
      assertFalse(mapped(dir.resolve("blk.meta")), "no mapping of the meta file in this process");
      assertEquals(liveBefore, ChecksumMappings.live(), "no mapping counted");
      assertEquals(1, f.fdCount(), "the meta channel is closed once its checksums are copied");
      assertFalse(f.meta().isOpen());
      assertTrue(f.isOpen());
      byte[] got = new byte[3000];
      for (int off : new int[] {0, 1, 511, 200_000, data.length - 3000}) {
        readFully(reader, f, off, got);
        assertArrayEquals(Arrays.copyOfRange(data, off, off + 3000), got, "at " + off);
      }
    }
    assertEquals(liveBefore, ChecksumMappings.live());
  }

  @Test
  void aCopiedChecksumThatDisagreesIsAChecksumError() throws Exception {
    byte[] data = random(20 * BPC);
    Path dir = write(data);
    byte[] meta = Files.readAllBytes(dir.resolve("blk.meta"));
    meta[metaBytes(3)] ^= 1; // the checksum of chunk 3
    Files.write(dir.resolve("blk.meta"), meta);
    LocalBlockReader reader = new LocalBlockReader();
    try (ReplicaFiles f = open(dir)) {
      assertNull(f.mappedSums());
      assertEquals(
          100,
          reader.read(
              f, 0, ByteBuffer.wrap(new byte[100], 0, 100), true, "/f", new ReadContext(4096)));
      ChecksumException e =
          assertThrows(
              ChecksumException.class,
              () ->
                  reader.read(
                      f,
                      3 * BPC + 10,
                      ByteBuffer.wrap(new byte[100], 0, 100),
                      true,
                      "/f",
                      new ReadContext(4096)));
      assertEquals(3 * BPC, e.getPos());
    }
  }

  @Test
  void aMetaFileOverTheLimitIsMappedAndReleasedOnClose() throws Exception {
    if (!ChecksumMappings.isAvailable()) {
      throw new org.opentest4j.TestAbortedException(
          "mapping unavailable: " + ChecksumMappings.unavailabilityCause());
    }
    // 1023 chunks: 4099 bytes, the smallest CRC32C meta file over the limit.
    byte[] data = random(1023 * BPC - 7);
    assertEquals(4099, metaBytes(1023));
    Path dir = write(data);
    int liveBefore = ChecksumMappings.live();
    LocalBlockReader reader = new LocalBlockReader();
    ReplicaFiles f = open(dir);
    try {
      assertNotNull(f.mappedSums(), "a meta file of 4099 bytes is mapped");
      assertTrue(mapped(dir.resolve("blk.meta")));
      assertEquals(liveBefore + 1, ChecksumMappings.live());
      assertEquals(1, f.fdCount());
      byte[] got = new byte[4000];
      int off = data.length - 4000;
      readFully(reader, f, off, got);
      assertArrayEquals(Arrays.copyOfRange(data, off, data.length), got);
    } finally {
      f.close();
    }
    assertEquals(liveBefore, ChecksumMappings.live());
    assertFalse(mapped(dir.resolve("blk.meta")), "released at close");
  }

  /** Resident kB of the mappings of {@code file} in this process ({@code Rss} in smaps). */
  private static long residentKb(Path file) throws IOException {
    String name = file.toString();
    long kb = 0;
    boolean inside = false;
    for (String line : Files.readAllLines(Paths.get("/proc/self/smaps"))) {
      if (line.matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
        inside = line.endsWith(name);
      } else if (inside && line.startsWith("Rss:")) {
        kb += Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    return kb;
  }

  @Test
  void prefaultingPutsEveryPageOfAMappedMetaFileInThePageTables() throws Exception {
    if (!ChecksumMappings.isAvailable()) {
      throw new org.opentest4j.TestAbortedException(
          "mapping unavailable: " + ChecksumMappings.unavailabilityCause());
    }
    // A 16 MiB block: 32,768 chunks, 131,079 meta bytes, 33 pages; more than the 16 pages Linux
    // maps around one fault, so touching one page would not pass.
    byte[] data = random(32768 * BPC);
    Path dir = write(data);
    Path meta = dir.resolve("blk.meta");
    ReplicaFiles f = open(dir);
    try {
      assertNotNull(f.mappedSums());
      assertEquals(0, residentKb(meta), "nothing of the mapping is touched at open");
      assertEquals(33, f.prefaultChecksums());
      // A prefetch calls this: the replica's first reads then take no page fault on its checksums.
      assertEquals(33 * 4, residentKb(meta), "all 33 pages are mapped into the page tables");
      LocalBlockReader reader = new LocalBlockReader();
      byte[] got = new byte[4096];
      readFully(reader, f, data.length - 4096, got);
      assertArrayEquals(Arrays.copyOfRange(data, data.length - 4096, data.length), got);
    } finally {
      f.close();
    }
  }

  @Test
  void prefaultingAHeapCopyTouchesNothing() throws Exception {
    Path dir = write(random(64 * BPC));
    ReplicaFiles f = open(dir);
    try {
      assertNull(f.mappedSums());
      assertEquals(0, f.prefaultChecksums());
    } finally {
      f.close();
    }
  }
}
