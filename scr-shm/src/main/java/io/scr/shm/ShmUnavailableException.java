package io.scr.shm;

import java.io.IOException;

/**
 * Shared memory cannot be used in this JVM or with this configuration. The message says why and
 * what to change; {@link #getCause()} carries the availability probe's cause when there is one.
 * Callers fall back to reads without a slot (or to the stock path).
 */
public final class ShmUnavailableException extends IOException {
  private static final long serialVersionUID = 1L;

  /** With the probe's (or the failed call's) cause. */
  public ShmUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
