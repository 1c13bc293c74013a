package io.scr.core.internal.read;

import java.io.IOException;

/** A block's meta file header is invalid (version, checksum type or chunk size). */
public final class CorruptMetaException extends IOException {
  private static final long serialVersionUID = 1L;

  CorruptMetaException(String message) {
    super(message);
  }
}
