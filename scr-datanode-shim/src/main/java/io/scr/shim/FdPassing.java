package io.scr.shim;

import java.io.FileDescriptor;
import java.io.IOException;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.Out;
import jnr.ffi.byref.IntByReference;
import org.newsclub.net.unix.FileDescriptorCast;

/**
 * Passes fds the way the stock client expects them: one {@code sendmsg(2)} carrying every fd in a
 * single {@code SCM_RIGHTS} control message plus exactly one data byte. The stock client does one
 * {@code recvmsg} and treats a missing fd as a failure, so Netty's one-fd-per-message writes are
 * not enough.
 *
 * <p>fd ownership: {@link #send} borrows the fds; the kernel gives the peer its own duplicates, and
 * the caller still closes its copies. Probed once ({@link #unavailabilityCause()}); the struct
 * layout is the LP64 Linux one (x86-64, aarch64). Thread-safe: calls share no state.
 */
final class FdPassing {
  /** What {@link #send} returns when the socket buffer is full and the caller must retry later. */
  static final int WOULD_BLOCK = -2;

  private static final int SOL_SOCKET = 1;
  private static final int SCM_RIGHTS = 1;
  private static final int MSG_DONTWAIT = 0x40;
  private static final int MSG_NOSIGNAL = 0x4000;
  private static final int EAGAIN = 11;

  /**
   * Linux: the sending user already has more fds in flight (sent with {@code SCM_RIGHTS} and not
   * yet received by their peers) than its {@code RLIMIT_NOFILE}, and is not privileged.
   */
  private static final int ETOOMANYREFS = 109;

  private static final int EINTR = 4;
  private static final int F_DUPFD_CLOEXEC = 1030;

  /** {@code SIOCOUTQ} ({@code TIOCOUTQ}, the same on x86-64 and aarch64). */
  private static final long SIOCOUTQ = 0x5411;

  /** Linux SCM_MAX_FD. */
  static final int MAX_FDS = 253;

  /** msghdr + iovec + data byte + the largest control message. */
  private static final int SCRATCH_BYTES = 80 + 16 + ((4 * MAX_FDS + 7) & ~7);

  /** Per-thread native scratch (event-loop threads): no allocation per message. */
  private static final ThreadLocal<Pointer> SCRATCH =
      ThreadLocal.withInitial(() -> Memory.allocateDirect(runtime(), SCRATCH_BYTES, true));

  private static final LibC LIBC;
  private static final Runtime RUNTIME;
  private static final Throwable UNAVAILABILITY;

  static {
    LibC lib = null;
    Runtime rt = null;
    Throwable cause = null;
    try {
      String arch = System.getProperty("os.arch", "");
      if (!System.getProperty("os.name", "").startsWith("Linux")
          || !(arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64"))) {
        throw new UnsupportedOperationException(
            "fd passing is implemented for 64-bit Linux (x86-64, aarch64), not "
                + System.getProperty("os.name")
                + "/"
                + arch);
      }
      lib = LibraryLoader.create(LibC.class).load("c");
      rt = Runtime.getRuntime(lib);
    } catch (Throwable t) { // LinkageError or a jnr failure: report it, never crash the DataNode
      cause = t;
      lib = null;
    }
    LIBC = lib;
    RUNTIME = rt;
    UNAVAILABILITY = cause;
  }

  private FdPassing() {}

  private static Runtime runtime() {
    return RUNTIME;
  }

  /** Null when fd passing works, else why not. */
  static Throwable unavailabilityCause() {
    return UNAVAILABILITY;
  }

  /** The int fd behind a {@link FileDescriptor} (a view: owned by whoever owns the descriptor). */
  static int fdNumber(FileDescriptor fd) throws IOException {
    return FileDescriptorCast.using(fd).as(Integer.class);
  }

  /**
   * One non-blocking {@code sendmsg} of {@code fds} and the single byte {@code dataByte} on {@code
   * socketFd}.
   *
   * @return 1 when sent, or {@link #WOULD_BLOCK} when the socket buffer is full (nothing was sent)
   * @throws IOException with errno for any other failure (e.g. the peer closed)
   */
  static int send(int socketFd, int[] fds, byte dataByte) throws IOException {
    if (LIBC == null) {
      throw new IOException("fd passing is unavailable", UNAVAILABILITY);
    }
    if (fds.length == 0 || fds.length > MAX_FDS) {
      throw new IllegalArgumentException("cannot pass " + fds.length + " fds in one message");
    }
    int dataLen = 4 * fds.length;
    int cmsgLen = 16 + dataLen; // CMSG_LEN
    int cmsgSpace = 16 + ((dataLen + 7) & ~7); // CMSG_SPACE
    // One allocation: [msghdr 56][iovec 16][byte 8][cmsg space]
    int msgOff = 0;
    int iovOff = 56;
    int byteOff = 72;
    int cmsgOff = 80;
    Pointer mem = SCRATCH.get();
    long base = mem.address();
    mem.putByte(byteOff, dataByte);
    mem.putLong(iovOff, base + byteOff); // iov_base
    mem.putLong(iovOff + 8, 1); // iov_len
    mem.putLong(cmsgOff, cmsgLen); // cmsg_len
    mem.putInt(cmsgOff + 8, SOL_SOCKET);
    mem.putInt(cmsgOff + 12, SCM_RIGHTS);
    for (int i = 0; i < fds.length; i++) {
      mem.putInt(cmsgOff + 16 + 4L * i, fds[i]);
    }
    mem.putLong(msgOff, 0); // msg_name
    mem.putInt(msgOff + 8, 0); // msg_namelen
    mem.putLong(msgOff + 16, base + iovOff); // msg_iov
    mem.putLong(msgOff + 24, 1); // msg_iovlen
    mem.putLong(msgOff + 32, base + cmsgOff); // msg_control
    mem.putLong(msgOff + 40, cmsgSpace); // msg_controllen
    mem.putInt(msgOff + 48, 0); // msg_flags
    while (true) {
      long n = LIBC.sendmsg(socketFd, mem, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n == 1) {
        return 1;
      }
      int errno = RUNTIME.getLastError();
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        return WOULD_BLOCK;
      }
      if (n < 0 && errno == ETOOMANYREFS) {
        throw new InFlightLimitException(fds.length);
      }
      throw new IOException(
          "sendmsg of "
              + fds.length
              + " fds on fd "
              + socketFd
              + " failed: n="
              + n
              + " errno="
              + errno);
    }
  }

  /**
   * One non-blocking {@code send} of {@code bytes[off, off + len)} on {@code socketFd}.
   *
   * @return the bytes sent (fewer than {@code len}, 0 included, when the socket buffer is full)
   * @throws IOException with errno for any other failure (e.g. the peer closed)
   */
  static int write(int socketFd, byte[] bytes, int off, int len) throws IOException {
    if (LIBC == null) {
      throw new IOException("fd passing is unavailable", UNAVAILABILITY);
    }
    if (len > SCRATCH_BYTES) {
      len = SCRATCH_BYTES; // the rest on the next call (replies are small; a batch may not be)
    }
    Pointer mem = SCRATCH.get();
    mem.put(0, bytes, off, len);
    while (true) {
      long n = LIBC.send(socketFd, mem, len, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) {
        return (int) n;
      }
      int errno = RUNTIME.getLastError();
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN) {
        return 0;
      }
      throw new IOException(
          "send of " + len + " bytes on fd " + socketFd + " failed: errno=" + errno);
    }
  }

  /**
   * A new fd (close-on-exec) for the socket behind {@code socketFd}, which the caller owns and must
   * {@link #close}: it keeps the socket, not just its number, for as long as it is open, so a
   * thread other than the socket's event loop can write to it even if the event loop closes its own
   * fd meanwhile (whose number the kernel may then give to another file).
   */
  static int duplicate(int socketFd) throws IOException {
    if (LIBC == null) {
      throw new IOException("fd passing is unavailable", UNAVAILABILITY);
    }
    int fd = LIBC.fcntl(socketFd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      throw new IOException(
          "duplicating fd " + socketFd + " failed: errno=" + RUNTIME.getLastError());
    }
    return fd;
  }

  /**
   * The bytes sent on UNIX socket {@code socketFd} that its peer has not read yet ({@code
   * ioctl(SIOCOUTQ)}: what this side sent and the peer's receive queue still holds), or -1 if that
   * cannot be told. While it is not 0, fds passed with those bytes may still be in flight, charged
   * to this process's user.
   */
  static int unreadByPeer(int socketFd) {
    if (LIBC == null) {
      return -1;
    }
    IntByReference unread = new IntByReference();
    return LIBC.ioctl(socketFd, SIOCOUTQ, unread) == 0 ? unread.getValue() : -1;
  }

  /** Closes an fd {@link #duplicate} returned. */
  static void close(int fd) {
    if (LIBC != null) {
      LIBC.close(fd);
    }
  }

  /** The libc calls used here. */
  public interface LibC {
    long sendmsg(int sockfd, Pointer msg, int flags);

    long send(int sockfd, Pointer buf, long len, int flags);

    int fcntl(int fd, int cmd, int arg);

    int ioctl(int fd, long request, @Out IntByReference arg);

    int close(int fd);
  }

  /**
   * {@code sendmsg} refused the fds with {@code ETOOMANYREFS}: this process's user has more fds in
   * flight than its open-file limit. Fds sent to a local client stay in flight, charged to the
   * DataNode's user, until the client reads them; a process that opens connections, asks for
   * segments or fds and never reads its replies pins them even after the shim closed those
   * connections, and then no client of this DataNode can be passed an fd until it reads or exits.
   */
  static final class InFlightLimitException extends IOException {
    private static final long serialVersionUID = 1L;

    InFlightLimitException(int fds) {
      super(
          "sendmsg of "
              + fds
              + " fds failed with ETOOMANYREFS: the DataNode user has more fds in flight (passed"
              + " to local clients that have not read them) than its open-file limit (ulimit -n);"
              + " a local process is holding connections with unread replies (ss -xp shows it,"
              + " with a non-zero Recv-Q on the shim socket): stop it, or raise the DataNode's"
              + " nofile limit");
    }
  }
}
