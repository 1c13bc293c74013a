package io.scr.core.read;

import java.io.BufferedReader;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
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
 * read). A mapping is undone deterministically when its replica closes ({@code
 * sun.misc.Unsafe.invokeCleaner}), never left to the garbage collector: a mapping of a deleted meta
 * file would keep its disk space allocated until then.
 *
 * <p>Bounded: each mapping is one kernel memory area ({@code vm.max_map_count}, 65530 by default,
 * counts them for the whole process), so at most a quarter of that limit is used; beyond it, and
 * whenever mapping is unavailable or fails, replicas read their checksums with {@code pread} as
 * before. Probed once: {@link #isAvailable()}, {@link #unavailabilityCause()}.
 *
 * <p>Thread-safety: thread-safe (an atomic count of live mappings).
 */
final class ChecksumMappings {
  private static final Logger LOG = LoggerFactory.getLogger(ChecksumMappings.class);

  /** Meta files larger than this are not mapped (a 1 GiB block has an 8 MiB meta file). */
  static final long MAX_MAPPED_BYTES = 64L << 20;

  private static final MethodHandle INVOKE_CLEANER;
  private static final Throwable UNAVAILABILITY_CAUSE;
  private static final int LIMIT = limit();
  private static final AtomicInteger LIVE = new AtomicInteger();

  static {
    MethodHandle h = null;
    Throwable cause = null;
    try {
      Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
      Field f = unsafeClass.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      h =
          MethodHandles.lookup()
              .findVirtual(
                  unsafeClass, "invokeCleaner", MethodType.methodType(void.class, ByteBuffer.class))
              .bindTo(f.get(null));
    } catch (ReflectiveOperationException | RuntimeException e) {
      cause = e;
      LOG.info(
          "meta files are not mapped (sun.misc.Unsafe.invokeCleaner is unavailable: {}); verified"
              + " reads pread their checksums",
          e.toString());
    }
    INVOKE_CLEANER = h;
    UNAVAILABILITY_CAUSE = cause;
  }

  private ChecksumMappings() {}

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

  /** Whether meta files can be mapped and unmapped deterministically in this JVM. */
  static boolean isAvailable() {
    return INVOKE_CLEANER != null;
  }

  /** Why {@link #isAvailable()} is false, or null. */
  static Throwable unavailabilityCause() {
    return UNAVAILABILITY_CAUSE;
  }

  /** Live mappings in this process. */
  static int live() {
    return LIVE.get();
  }

  /**
   * Maps {@code size} bytes of {@code meta} read-only, or returns null (unavailable, too large, at
   * the limit, or mmap failed): the caller then preads. A non-null result must be given back to
   * {@link #unmap} exactly once, after its last use.
   */
  static MappedByteBuffer map(FileChannel meta, long size) {
    if (INVOKE_CLEANER == null || size > MAX_MAPPED_BYTES || size <= 0) {
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

  /** Unmaps now. The buffer must not be touched afterwards (that would fault). */
  static void unmap(MappedByteBuffer mapping) {
    try {
      INVOKE_CLEANER.invokeExact((ByteBuffer) mapping);
    } catch (Throwable t) {
      LOG.warn("unmapping a meta file failed; the garbage collector will", t);
    } finally {
      LIVE.decrementAndGet();
    }
  }
}
