package io.scr.shm.internal;

import jnr.ffi.Pointer;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;
import jnr.ffi.annotations.SaveError;

/**
 * The libc functions scr-shm binds through jnr-ffi. Only {@link NativeIo} calls these; everything
 * else goes through its checked wrappers, which turn {@code -1}/errno into exceptions that name the
 * call.
 *
 * <p>mmap/munmap take and return jnr {@code Pointer}s only at the call boundary ({@code long}
 * arguments in those positions are mis-marshalled by jnr-ffi 2.2.17: mmap then fails with EINVAL);
 * {@link NativeIo} keeps the address as a {@code long} owned by {@link io.scr.shm.Segment}.
 */
public interface LibC {
  @SaveError
  Pointer mmap(Pointer addr, long length, int prot, int flags, int fd, long offset);

  @SaveError
  int munmap(Pointer addr, long length);

  @SaveError
  int memfd_create(String name, int flags);

  @SaveError
  int open(String path, int flags, int mode);

  @SaveError
  int unlink(String path);

  @SaveError
  int close(int fd);

  @SaveError
  int ftruncate(int fd, long length);

  @SaveError
  long pwrite(int fd, @In byte[] buf, long count, long offset);

  @SaveError
  int fcntl(int fd, int cmd, int arg);

  @SaveError
  int getrlimit(int resource, @Out Pointer rlim);

  /** Returns an errno value directly (0 on success), never -1. */
  int posix_fadvise(int fd, long offset, long len, int advice);

  String strerror(int errnum);
}
