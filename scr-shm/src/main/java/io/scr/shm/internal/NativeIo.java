package io.scr.shm.internal;

import io.scr.shm.ShmUnavailableException;
import java.io.FileDescriptor;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Locale;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import org.newsclub.net.unix.FileDescriptorCast;

/**
 * The native calls scr needs, through jnr-ffi (no native library of our own), and the one
 * availability probe for them.
 *
 * <p>Every wrapper turns a failed call into an {@link IOException} that names the call, its
 * arguments and errno. Callers that need to know <em>whether</em> native access works call {@link
 * #isAvailable()} / {@link #unavailabilityCause()} once (the probe runs once per JVM) instead of
 * catching link errors.
 *
 * <p>fd ownership: functions that return an fd ({@link #memfdCreate}, {@link #openExclusive}) hand
 * it to the caller, who must {@link #close(int)} it exactly once. Functions that take an fd borrow
 * it for the duration of the call.
 *
 * <p>Linux only (the constants are the generic Linux ABI values shared by x86-64 and aarch64).
 * Thread-safe: stateless apart from the probe result.
 */
public final class NativeIo {
  // mman.h
  static final int PROT_READ = 0x1;
  static final int PROT_WRITE = 0x2;
  static final int MAP_SHARED = 0x01;
  static final int MAP_PRIVATE = 0x02;
  static final int MAP_FIXED = 0x10;
  static final int MAP_ANONYMOUS = 0x20;
  static final long MAP_FAILED = -1L;
  // memfd.h / fcntl.h
  static final int MFD_CLOEXEC = 0x1;
  static final int MFD_ALLOW_SEALING = 0x2;
  static final int F_ADD_SEALS = 1033;
  static final int F_GET_SEALS = 1034;

  /** {@code F_SEAL_SEAL}: no further seals may be added. */
  public static final int F_SEAL_SEAL = 0x1;

  /** {@code F_SEAL_SHRINK}: the file may not shrink. */
  public static final int F_SEAL_SHRINK = 0x2;

  /** {@code F_SEAL_GROW}: the file may not grow. */
  public static final int F_SEAL_GROW = 0x4;

  static final int O_RDWR = 02;
  static final int O_CREAT = 0100;
  static final int O_EXCL = 0200;
  static final int O_CLOEXEC = 02000000;
  static final int RLIMIT_NOFILE = 7;
  static final int EINTR = 4;
  static final int EEXIST = 17;

  private NativeIo() {}

  /** Advice values for {@link #fadvise}. */
  public enum Advice {
    NORMAL(0),
    RANDOM(1),
    SEQUENTIAL(2),
    WILLNEED(3),
    DONTNEED(4),
    NOREUSE(5);

    final int value;

    Advice(int value) {
      this.value = value;
    }
  }

  /** {@code RLIMIT_NOFILE}: the soft and hard limit on open fds of this process. */
  public static final class OpenFileLimit {
    private final long soft;
    private final long hard;

    OpenFileLimit(long soft, long hard) {
      this.soft = soft;
      this.hard = hard;
    }

    /** The limit the kernel enforces now; {@code Long.MAX_VALUE} when unlimited. */
    public long soft() {
      return soft;
    }

    /** The ceiling the soft limit may be raised to; {@code Long.MAX_VALUE} when unlimited. */
    public long hard() {
      return hard;
    }

    @Override
    public String toString() {
      return "RLIMIT_NOFILE{soft=" + soft + ", hard=" + hard + "}";
    }
  }

  /** Whether mmap, fd creation and fd interop all work in this JVM; probed once. */
  public static boolean isAvailable() {
    return Probe.CAUSE == null;
  }

  /** Why native access is unavailable, or {@code null} when {@link #isAvailable()}. */
  public static Throwable unavailabilityCause() {
    return Probe.CAUSE;
  }

  /** Throws, with the probe's cause, unless {@link #isAvailable()}. */
  public static void ensureAvailable() throws ShmUnavailableException {
    Throwable cause = Probe.CAUSE;
    if (cause != null) {
      throw new ShmUnavailableException(
          "Shared memory is unavailable in this JVM: "
              + cause.getMessage()
              + ". scr needs Linux with jnr-ffi able to load libc and junixsocket able to load its"
              + " native library; short-circuit reads fall back to the stock path.",
          cause);
    }
  }

  /** Whether {@code memfd_create} with sealing works (Linux 3.17+, glibc 2.27+); probed once. */
  public static boolean isMemfdAvailable() {
    return Probe.CAUSE == null && Probe.MEMFD_CAUSE == null;
  }

  /** Why {@code memfd_create} is unavailable, or {@code null}. */
  public static Throwable memfdUnavailabilityCause() {
    return Probe.CAUSE != null ? Probe.CAUSE : Probe.MEMFD_CAUSE;
  }

  /**
   * {@code mmap(NULL, length, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0)}. The fd is borrowed; the
   * mapping outlives it and must be released with {@link #munmap} exactly once.
   */
  public static long mmapShared(int fd, long length) throws IOException {
    long address = mmap(libc(), fd, length);
    if (address == MAP_FAILED || address == 0L) {
      throw failure("mmap(fd=" + fd + ", length=" + length + ", MAP_SHARED)");
    }
    return address;
  }

  /**
   * Replaces the pages of an existing mapping at {@code address} with private anonymous zero pages,
   * in one step: {@code mmap(address, length, PROT_READ|PROT_WRITE,
   * MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED, -1, 0)}. The memory the old mapping shared is released
   * (once no other process maps it either), and a thread that touches the range afterwards reads
   * zeros instead of faulting. The range stays reserved: release it with {@link #munmap} exactly
   * once, when nothing can touch it any more.
   */
  public static void replaceWithZeroPages(long address, long length) throws IOException {
    LibC c = libc();
    Runtime runtime = Runtime.getRuntime(c);
    Pointer p =
        c.mmap(
            Pointer.wrap(runtime, address),
            length,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
            -1,
            0L);
    if (p == null || p.address() != address) {
      throw failure(
          "mmap(0x" + Long.toHexString(address) + ", " + length + ", MAP_ANONYMOUS|MAP_FIXED)");
    }
  }

  /**
   * The address of a direct buffer's first byte (JNI {@code GetDirectBufferAddress}, through
   * jnr-ffi: no {@code --add-opens} needed). The buffer must be kept reachable while the address is
   * used: the address says nothing about the lifetime of the memory.
   *
   * @throws IllegalArgumentException if {@code buffer} is not direct
   */
  public static long addressOf(java.nio.ByteBuffer buffer) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("not a direct buffer: " + buffer);
    }
    return Pointer.wrap(Runtime.getSystemRuntime(), buffer).address();
  }

  /** {@code munmap(address, length)}. */
  public static void munmap(long address, long length) throws IOException {
    LibC c = libc();
    if (c.munmap(Pointer.wrap(Runtime.getRuntime(c), address), length) != 0) {
      throw failure("munmap(0x" + Long.toHexString(address) + ", " + length + ")");
    }
  }

  /**
   * {@code memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)}. The caller owns the returned fd.
   */
  public static int memfdCreate(String name) throws IOException {
    int fd = libc().memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
      throw failure("memfd_create(" + name + ", MFD_CLOEXEC|MFD_ALLOW_SEALING)");
    }
    return fd;
  }

  /** {@code fcntl(fd, F_ADD_SEALS, seals)}. */
  public static void addSeals(int fd, int seals) throws IOException {
    if (libc().fcntl(fd, F_ADD_SEALS, seals) != 0) {
      throw failure("fcntl(fd=" + fd + ", F_ADD_SEALS, " + seals + ")");
    }
  }

  /** {@code fcntl(fd, F_GET_SEALS)}. */
  public static int getSeals(int fd) throws IOException {
    int seals = libc().fcntl(fd, F_GET_SEALS, 0);
    if (seals < 0) {
      throw failure("fcntl(fd=" + fd + ", F_GET_SEALS)");
    }
    return seals;
  }

  /**
   * {@code open(path, O_CREAT|O_EXCL|O_RDWR|O_CLOEXEC, 0600)}, retrying on EINTR. The caller owns
   * the returned fd. Fails with EEXIST if the file exists.
   */
  public static int openExclusive(Path path) throws IOException {
    String p = path.toString();
    while (true) {
      int fd = libc().open(p, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
      if (fd >= 0) {
        return fd;
      }
      if (errno() != EINTR) {
        throw failure("open(" + p + ", O_CREAT|O_EXCL|O_RDWR|O_CLOEXEC, 0600)");
      }
    }
  }

  /** {@code unlink(path)}. */
  public static void unlink(Path path) throws IOException {
    if (libc().unlink(path.toString()) != 0) {
      throw failure("unlink(" + path + ")");
    }
  }

  /** {@code close(fd)}. Never retried on EINTR: on Linux the fd is released either way. */
  public static void close(int fd) throws IOException {
    if (libc().close(fd) != 0) {
      throw failure("close(" + fd + ")");
    }
  }

  /** {@code ftruncate(fd, length)}. */
  public static void ftruncate(int fd, long length) throws IOException {
    if (libc().ftruncate(fd, length) != 0) {
      throw failure("ftruncate(fd=" + fd + ", " + length + ")");
    }
  }

  /**
   * Writes {@code length} zero bytes at offset 0 with {@code pwrite}, so the pages are allocated
   * now rather than on first touch (HDFS-6912: a sparse file on a full tmpfs raises SIGBUS later).
   */
  public static void writeZeros(int fd, long length) throws IOException {
    byte[] zeros = new byte[(int) Math.min(length, 64 * 1024)];
    long offset = 0;
    while (offset < length) {
      long chunk = Math.min(zeros.length, length - offset);
      long n = libc().pwrite(fd, zeros, chunk, offset);
      if (n < 0) {
        if (errno() == EINTR) {
          continue;
        }
        throw failure("pwrite(fd=" + fd + ", " + chunk + " zero bytes at " + offset + ")");
      }
      offset += n;
    }
  }

  /** {@code getrlimit(RLIMIT_NOFILE)}. */
  public static OpenFileLimit openFileLimit() throws IOException {
    LibC c = libc();
    Pointer rlim = Memory.allocateDirect(Runtime.getRuntime(c), 16, true);
    if (c.getrlimit(RLIMIT_NOFILE, rlim) != 0) {
      throw failure("getrlimit(RLIMIT_NOFILE)");
    }
    return new OpenFileLimit(unlimited(rlim.getLong(0)), unlimited(rlim.getLong(8)));
  }

  private static long unlimited(long rlim) {
    // RLIM_INFINITY is all ones, which reads as -1 in a signed long.
    return rlim < 0 ? Long.MAX_VALUE : rlim;
  }

  /** {@code posix_fadvise(fd, offset, length, advice)}; advice is a hint, the fd is borrowed. */
  public static void fadvise(int fd, long offset, long length, Advice advice) throws IOException {
    int rc = libc().posix_fadvise(fd, offset, length, advice.value);
    if (rc != 0) {
      throw new IOException(
          "posix_fadvise(fd="
              + fd
              + ", "
              + offset
              + ", "
              + length
              + ", "
              + advice
              + ") failed: "
              + describe(rc));
    }
  }

  /**
   * The numeric fd behind a {@link FileDescriptor}, e.g. one received over a UNIX socket, through
   * junixsocket's {@link FileDescriptorCast} (no {@code --add-opens}). The fd is not duplicated:
   * the number is valid only while {@code fd} stays open, and whoever owns {@code fd} still closes
   * it.
   */
  public static int fdNumber(FileDescriptor fd) throws IOException {
    if (fd == null || !fd.valid()) {
      throw new IOException("not a valid (open) FileDescriptor");
    }
    Integer n = FileDescriptorCast.using(fd).as(Integer.class);
    return n;
  }

  /**
   * A {@link FileDescriptor} view of a numeric fd, e.g. to pass over a UNIX socket. The number is
   * not duplicated: the caller keeps owning it, and must not close the returned object (closing a
   * stream wrapped around it would close the caller's fd).
   */
  public static FileDescriptor fileDescriptorView(int fd) throws IOException {
    return FileDescriptorCast.unsafeUsing(fd).getFileDescriptor();
  }

  private static long mmap(LibC c, int fd, long length) {
    Pointer p = c.mmap(null, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0L);
    return p == null ? 0L : p.address();
  }

  static String describe(int errno) {
    String text;
    try {
      text = libc().strerror(errno);
    } catch (RuntimeException | LinkageError e) {
      text = null;
    }
    return "errno " + errno + (text == null ? "" : " (" + text + ")");
  }

  static int errno() {
    return Runtime.getRuntime(libc()).getLastError();
  }

  private static IOException failure(String call) {
    int errno = errno();
    return new NativeCallException(call + " failed: " + describe(errno), errno);
  }

  static LibC libc() {
    LibC c = Probe.LIBC;
    if (c == null) {
      throw new IllegalStateException("libc is not loaded", Probe.CAUSE);
    }
    return c;
  }

  /** Runs the probe once, on first use. */
  private static final class Probe {
    static final LibC LIBC;
    static final Throwable CAUSE;
    static final Throwable MEMFD_CAUSE;

    static {
      LibC libc = null;
      Throwable cause = null;
      Throwable memfdCause = null;
      try {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (!os.startsWith("linux")) {
          throw new UnsupportedOperationException("not Linux (os.name=" + os + ")");
        }
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN
            || !"64".equals(System.getProperty("sun.arch.data.model", "64"))) {
          throw new UnsupportedOperationException(
              "not a 64-bit little-endian platform (os.arch="
                  + System.getProperty("os.arch")
                  + ")");
        }
        libc = LibraryLoader.create(LibC.class).failImmediately().load("c");
      } catch (Throwable t) { // LinkageError from jnr/jffi included: that is what we report.
        cause = t;
      }
      LIBC = libc;
      if (cause == null) {
        cause = probeMapping(libc);
      }
      if (cause == null) {
        memfdCause = probeMemfd(libc);
      }
      CAUSE = cause;
      MEMFD_CAUSE = memfdCause;
    }

    /** Maps a real fd (stdin's number through junixsocket, then a memfd or temp file) once. */
    private static Throwable probeMapping(LibC libc) {
      try {
        int in = FileDescriptorCast.using(FileDescriptor.in).as(Integer.class);
        if (in != 0) {
          return new IOException("junixsocket reported fd " + in + " for stdin, expected 0");
        }
        int fd = libc.open("/dev/zero", O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
          return new IOException(
              "open(/dev/zero) failed: errno " + Runtime.getRuntime(libc).getLastError());
        }
        try {
          long address = mmap(libc, fd, 4096);
          if (address == MAP_FAILED || address == 0L) {
            return new IOException(
                "mmap(MAP_SHARED) failed: errno " + Runtime.getRuntime(libc).getLastError());
          }
          try {
            SharedWords words = SharedWords.wrap(address, 4096);
            if (!words.compareAndSetLong(0, 0L, 42L) || words.loadVolatile(0) != 42L) {
              return new IOException("compare-and-set on a mapped word did not take effect");
            }
          } finally {
            libc.munmap(Pointer.wrap(Runtime.getRuntime(libc), address), 4096);
          }
        } finally {
          libc.close(fd);
        }
        return null;
      } catch (Throwable t) {
        return t;
      }
    }

    private static Throwable probeMemfd(LibC libc) {
      try {
        int fd = libc.memfd_create("scr-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0) {
          return new IOException(
              "memfd_create failed: errno " + Runtime.getRuntime(libc).getLastError());
        }
        try {
          if (libc.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
            return new IOException(
                "fcntl(F_ADD_SEALS) failed: errno " + Runtime.getRuntime(libc).getLastError());
          }
        } finally {
          libc.close(fd);
        }
        return null;
      } catch (Throwable t) { // UnsatisfiedLinkError when glibc predates memfd_create.
        return t;
      }
    }
  }
}
