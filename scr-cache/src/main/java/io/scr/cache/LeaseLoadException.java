package io.scr.cache;

import java.io.IOException;

/**
 * A lease could not be granted because loading the value failed. Thrown to the thread that ran the
 * loader and to every thread that waited on the same load; the loader's exception is the cause.
 * Nothing was cached, so the next lease of the key loads again.
 */
public class LeaseLoadException extends IOException {
  private static final long serialVersionUID = 1L;

  /** Creates an exception for a failed load of {@code key}. */
  public LeaseLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
