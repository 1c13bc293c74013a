package io.scr.shm.internal;

import java.io.IOException;

/** A failed libc call: the message names the call and its arguments; {@link #errno()} is raw. */
public final class NativeCallException extends IOException {
  private static final long serialVersionUID = 1L;

  private final int errno;

  NativeCallException(String message, int errno) {
    super(message);
    this.errno = errno;
  }

  /** The errno the call left behind. */
  public int errno() {
    return errno;
  }
}
