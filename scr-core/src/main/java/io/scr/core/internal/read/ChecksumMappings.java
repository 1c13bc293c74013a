package io.scr.core.internal.read;

import io.scr.shm.internal.NativeIo;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Read-only mappings of meta files, so that a verified read looks its checksums up in memory
 * instead of making a second {@code pread} (about 0.6 µs of CPU for 36 bytes, a third of a 4 KiB
 * read).
 *
 * <p><b>One memory-safety rule.</b> Nothing is unmapped while a reader may still touch it. A
 * mapping is {@linkplain #release released} when its replica closes: its pages are replaced, in one
 * {@code mmap(MAP_FIXED)}, by private zero pages (the way {@code io.scr.shm.Segment} closes), so
 * the meta file is no longer mapped (a deleted meta file's disk space is freed at once) and a
 * thread that still reads the buffer, which only a lease used after its close can do, reads zeros
 * instead of faulting the JVM. The address range itself is unmapped by the JDK's own cleaner of the
 * buffer once nothing refers to it. (Before, the range was unmapped at close with {@code
 * Unsafe.invokeCleaner}, and such a read crashed the process.)
 *
 * <p>Bounded: each mapping is one kernel memory area ({@code vm.max_map_count}, 65530 by default,
 * counts them for the whole process), so at most a quarter of that limit is live at once (a
 * released range still counts for the kernel until its buffer is collected); beyond it, and
 * whenever mapping is unavailable or fails, replicas read their checksums with {@code pread} as
 * before. Mapping needs the native calls of scr-shm ({@link NativeIo}); probed once: {@link
 * #isAvailable()}, {@link #unavailabilityCause()}.
 *
 * <p>Thread-safety: thread-safe (an atomic count of live mappings).
 */
final class ChecksumMappings {
  private static final Logger LOG = LoggerFactory.getLogger(ChecksumMappings.class);

  /** Meta files larger than this are not mapped (a 1 GiB block has an 8 MiB meta file). */
  static final long MAX_MAPPED_BYTES = 64L << 20;

  private static final Throwable UNAVAILABILITY_CAUSE = probe();
  private static final int LIMIT = limit();
  private static final AtomicInteger LIVE = new AtomicInteger();

  private ChecksumMappings() {}

  private static Throwable probe() {
    Throwable cause = NativeIo.isAvailable() ? null : NativeIo.unavailabilityCause();
    if (cause != null) {
      LOG.info(
          "meta files are not mapped (native calls are unavailable: {}); verified reads pread"
              + " their checksums",
          cause.toString());
    }
    return cause;
  }

  /** A quarter of {@code vm.max_map_count}, or 16384 if it cannot be read. */
  static int limit() {
    // One read of a line: a sysctl file answers a read at offset 0 with the whole value and ends
    // there, so a reader that starts small (Files.readAllBytes of a "0-byte" file) gets one digit.
    try (BufferedReader in =
        Files.newBufferedReader(Paths.get("/proc/sys/vm/max_map_count"), StandardCharsets.UTF_8)) {
      String line = in.readLine();
      return line == null ? 16384 : Math.max(0, Integer.parseInt(line.trim()) / 4);
    } catch (IOException | RuntimeException e) {
      return 16384;
    }
  }

  /** Whether meta files can be mapped and released safely in this JVM. */
  static boolean isAvailable() {
    return UNAVAILABILITY_CAUSE == null;
  }

  /** Why {@link #isAvailable()} is false, or null. */
  static Throwable unavailabilityCause() {
    return UNAVAILABILITY_CAUSE;
  }

  /** Live (not yet released) mappings in this process. */
  static int live() {
    return LIVE.get();
  }

  /**
   * Maps {@code size} bytes of {@code meta} read-only, or returns null (unavailable, too large, at
   * the limit, or mmap failed): the caller then preads. A non-null result must be given to {@link
   * #release} exactly once, when its replica closes.
   */
  static MappedByteBuffer map(FileChannel meta, long size) {
    if (UNAVAILABILITY_CAUSE != null || size > MAX_MAPPED_BYTES || size <= 0) {
      return null;
    }
    if (LIVE.incrementAndGet() > LIMIT) {
      LIVE.decrementAndGet();
      return null;
    }
    try {
      return meta.map(FileChannel.MapMode.READ_ONLY, 0, size);
    } catch (IOException | RuntimeException e) {
      LIVE.decrementAndGet();
      LOG.debug("mapping a meta file failed; its checksums are pread", e);
      return null;
    }
  }

  /**
   * Releases the meta file behind {@code mapping} now: its pages become private zero pages, so the
   * file is no longer mapped and a late read sees zeros rather than faulting; the address range is
   * unmapped by the garbage collector with the buffer. Should the replacement fail, the file stays
   * mapped until then (memory and disk space held longer; nothing is ever unmapped under a reader).
   */
  static void release(MappedByteBuffer mapping) {
    try {
      zeroPages(mapping, "a meta file");
    } finally {
      LIVE.decrementAndGet();
    }
  }

  /**
   * Replaces the pages of {@code mapping} (made at file offset 0, so page-aligned) with private
   * zero pages: the file is no longer mapped, a late read sees zeros rather than faulting, and the
   * JDK's cleaner unmaps the range once the buffer is unreachable. Shared by meta and block-file
   * ({@link ReplicaFiles#mapData}) mappings. On failure the file stays mapped until the garbage
   * collector unmaps it (memory and disk space held longer; nothing is ever unmapped under a
   * reader).
   *
   * @param what names the file kind in the warning
   */
  static void zeroPages(MappedByteBuffer mapping, String what) {
    try {
      long address = NativeIo.addressOf(mapping);
      // mmap rounds the length up to pages.
      NativeIo.replaceWithZeroPages(address, mapping.capacity());
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "releasing the mapping of {} failed; it stays mapped until garbage collected: {}",
          what,
          e.toString());
    }
  }
}
