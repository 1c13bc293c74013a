package io.scr.shm;

import io.scr.shm.internal.NativeIo;

/**
 * Whether shared-memory segments work in this JVM, and why not; probed once per JVM (load libc
 * through jnr-ffi, read an fd number through junixsocket, map {@code /dev/zero} shared and CAS a
 * word in it; separately, {@code memfd_create} with sealing).
 *
 * <p>Never a silent fallback: when memfd is unavailable {@link SegmentFactory} uses a deleted file
 * and says so; when shared memory as a whole is unavailable every entry point throws {@link
 * ShmUnavailableException} with {@link #unavailabilityCause()} attached. Thread-safe.
 */
public final class ShmSupport {
  private ShmSupport() {}

  /** Whether segments can be mapped and slots accessed atomically. */
  public static boolean isAvailable() {
    return NativeIo.isAvailable();
  }

  /** Why not, or {@code null} when {@link #isAvailable()}. */
  public static Throwable unavailabilityCause() {
    return NativeIo.unavailabilityCause();
  }

  /** Throws with the probe's cause unless {@link #isAvailable()}. */
  public static void ensureAvailable() throws ShmUnavailableException {
    NativeIo.ensureAvailable();
  }

  /** Whether {@code memfd_create} with seals works (otherwise creators use a deleted file). */
  public static boolean isMemfdAvailable() {
    return NativeIo.isMemfdAvailable();
  }

  /** Why memfd is unavailable, or {@code null}. */
  public static Throwable memfdUnavailabilityCause() {
    return NativeIo.memfdUnavailabilityCause();
  }
}
