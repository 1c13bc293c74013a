package io.scr.shim;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Random;
import jnr.ffi.LibraryLoader;

/**
 * A file on a real disk whose pages a test can drop from the page cache ({@code
 * posix_fadvise(DONTNEED)} after an {@code fsync}), so that the next read goes to storage: the disk
 * read of a cold DataNode directory or block file, without root or dropping every cache.
 */
final class ColdFile {
  /** libc's posix_fadvise (jnr-ffi). */
  public interface Fadvise {
    int posix_fadvise(int fd, long offset, long len, int advice);
  }

  private static final int POSIX_FADV_DONTNEED = 4;
  private static final Fadvise LIBC = LibraryLoader.create(Fadvise.class).load("c");

  private final Path path;

  /**
   * Writes {@code bytes} of random data to {@code path} and syncs it (clean pages can be dropped).
   */
  ColdFile(Path path, int bytes) throws IOException {
    this.path = path;
    byte[] data = new byte[bytes];
    new Random(7).nextBytes(data);
    try (FileOutputStream out = new FileOutputStream(path.toFile())) {
      out.write(data);
      out.getFD().sync();
    }
  }

  /**
   * Drops the file's pages from the page cache, then reads it all on this thread; returns the bytes
   * this thread read from storage meanwhile ({@code read_bytes} of /proc/thread-self/io), 0 on a
   * file system that reads no device (tmpfs) or a kernel without task I/O accounting.
   */
  long readCold() {
    try (FileInputStream in = new FileInputStream(path.toFile());
        FileChannel ch = in.getChannel()) {
      LIBC.posix_fadvise(FdPassing.fdNumber(in.getFD()), 0, 0, POSIX_FADV_DONTNEED);
      long before = threadReadBytes();
      ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
      while (ch.read(buf) > 0) {
        buf.clear();
      }
      return threadReadBytes() - before;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static long threadReadBytes() throws IOException {
    Path io = Paths.get("/proc/thread-self/io");
    if (!Files.isReadable(io)) {
      return 0;
    }
    for (String line : Files.readAllLines(io)) {
      if (line.startsWith("read_bytes:")) {
        return Long.parseLong(line.substring("read_bytes:".length()).trim());
      }
    }
    return 0;
  }
}
