package io.scr.core.net;

import java.io.IOException;

/**
 * The DataNode answered a short-circuit request with an error status. {@link #failureClass()} says
 * whether the whole socket path should back off ({@link FailureClass#UNSUPPORTED}) or only this
 * block falls back to the stock path (null: unknown block, generation-stamp mismatch, missing meta
 * file, version refused).
 */
public final class ShortCircuitRefusedException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String status;
  private final transient FailureClass failureClass;

  ShortCircuitRefusedException(String message, String status, FailureClass failureClass) {
    super(message);
    this.status = status;
    this.failureClass = failureClass;
  }

  /** The DataNode's status name (e.g. {@code ERROR}, {@code ERROR_UNSUPPORTED}). */
  public String status() {
    return status;
  }

  /** The path-wide failure class, or null when only this block is affected. */
  public FailureClass failureClass() {
    return failureClass;
  }
}
