package io.scr.cache;

import java.io.IOException;

/** A lease was requested from a cache that has been closed. */
public final class LeaseCacheClosedException extends IOException {
  private static final long serialVersionUID = 1L;

  LeaseCacheClosedException(String message) {
    super(message);
  }
}
