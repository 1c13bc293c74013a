package io.scr.shm;

import java.io.IOException;

/**
 * {@link SlotPool#allocate()} was called on (or was waiting in) a pool that has been closed, e.g.
 * while the client shuts down; the reader goes on without a slot.
 */
public final class SlotPoolClosedException extends IOException {
  private static final long serialVersionUID = 1L;

  SlotPoolClosedException(String message) {
    super(message);
  }
}
