package io.scr.shm;

import java.io.IOException;

/**
 * A creator-side slot operation named a slot that cannot be used: out of range, already registered,
 * not registered, or not marked VALID by the client. The DataNode side answers the client's request
 * with an error; the segment is unchanged.
 */
public final class InvalidSlotException extends IOException {
  private static final long serialVersionUID = 1L;

  InvalidSlotException(String message) {
    super(message);
  }
}
