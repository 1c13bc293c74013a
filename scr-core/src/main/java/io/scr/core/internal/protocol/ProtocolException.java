package io.scr.core.internal.protocol;

import java.io.IOException;

/**
 * The peer sent bytes that do not follow the short-circuit protocol (wrong version, malformed
 * length or message, missing fds). The connection it came from must not be reused.
 */
public final class ProtocolException extends IOException {
  private static final long serialVersionUID = 1L;

  /** With a message naming what was wrong. */
  public ProtocolException(String message) {
    super(message);
  }

  /** With a message and the parser's exception. */
  public ProtocolException(String message, Throwable cause) {
    super(message, cause);
  }
}
