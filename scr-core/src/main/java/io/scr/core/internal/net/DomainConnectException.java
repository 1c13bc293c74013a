package io.scr.core.internal.net;

import java.io.IOException;

/**
 * Connecting to a DataNode's UNIX socket failed: the path does not exist, nobody listens, access is
 * denied, or the connect timed out. The message names the path and the likely remedy.
 */
public final class DomainConnectException extends IOException {
  private static final long serialVersionUID = 1L;

  DomainConnectException(String message, Throwable cause) {
    super(message, cause);
  }
}
