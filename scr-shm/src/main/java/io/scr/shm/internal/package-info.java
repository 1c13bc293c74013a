/**
 * Native access that other scr modules use across module boundaries but that is not part of the
 * public API: libc calls through jnr-ffi ({@link io.scr.shm.internal.NativeIo}: mmap, memfd,
 * getrlimit, posix_fadvise, fd numbers of {@link java.io.FileDescriptor}s via junixsocket) and
 * atomic access to shared words ({@link io.scr.shm.internal.SharedWords}), failure logging that the
 * client modules share ({@link io.scr.shm.internal.FailureLog}), and whether a failure is the
 * calling thread's own interrupt ({@link io.scr.shm.internal.Interrupts}). May change without
 * notice.
 */
package io.scr.shm.internal;
