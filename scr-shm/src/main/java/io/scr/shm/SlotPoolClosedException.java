package io.scr.shm;

import java.io.IOException;

/**
 * {@link SlotPool#allocate()} was called on (or was waiting in) a pool that has been closed, e.g.
 * while the client shuts down; the reader goes on without a slot. A {@link SegmentSource} that is
 * shutting down throws it from {@code fetch()} too: the pool then stops fetching without calling it
 * a failure.
 */
public final class SlotPoolClosedException extends IOException {
  private static final long serialVersionUID = 1L;

  /** With {@code message} naming what closed. */
  public SlotPoolClosedException(String message) {
    super(message);
  }
}
