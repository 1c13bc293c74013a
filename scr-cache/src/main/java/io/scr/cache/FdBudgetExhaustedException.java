package io.scr.cache;

/**
 * A load was refused because it would have taken the cache past its fd budget and no idle entry
 * could be closed in time to make room: every cached value is leased. The caller should fall back
 * to a path that opens no cached fds (for scr-core: a remote read). Raise the budget ({@code
 * scr.cache.fd.budget}, or the process fd limit it is derived from) if this happens in steady
 * state.
 */
public final class FdBudgetExhaustedException extends LeaseLoadException {
  private static final long serialVersionUID = 1L;

  FdBudgetExhaustedException(String message, Throwable cause) {
    super(message, cause);
  }
}
