package io.scr.core.internal.net;

import io.scr.core.stats.FailureClass;
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
  private final boolean replicaAbsent;

  ShortCircuitRefusedException(String message, String status, FailureClass failureClass) {
    this(message, status, failureClass, false);
  }

  ShortCircuitRefusedException(
      String message, String status, FailureClass failureClass, boolean replicaAbsent) {
    super(message);
    this.status = status;
    this.failureClass = failureClass;
    this.replicaAbsent = replicaAbsent;
  }

  /**
   * A refusal answered from memory: the DataNode at the path refused this block as absent a moment
   * ago (remembered by the caller), so it is not asked again. {@link #replicaAbsent()} is true.
   */
  public static ShortCircuitRefusedException rememberedAbsent(String message) {
    return new ShortCircuitRefusedException(message, "ERROR", null, true);
  }

  /** The DataNode's status name (e.g. {@code ERROR}, {@code ERROR_UNSUPPORTED}). */
  public String status() {
    return status;
  }

  /**
   * Whether the DataNode said it holds no such replica (unknown block, or not of this generation
   * stamp): asking it again for this block and generation stamp would be refused again, until a
   * replica is moved or copied there. False for every other refusal (slot, version, unsupported).
   */
  public boolean replicaAbsent() {
    return replicaAbsent;
  }

  /** The path-wide failure class, or null when only this block is affected. */
  public FailureClass failureClass() {
    return failureClass;
  }
}
