package io.scr.shm.internal;

import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;

/**
 * Stock's rule for interrupts ({@code DFSInputStream.checkInterrupted}): on an interrupted thread,
 * an interrupt-typed exception is that thread's outcome, not a property of the replica, the
 * DataNode or its shared memory. Nothing is demoted, backed off or counted as a failure for it.
 *
 * <p>Thread-safety: stateless.
 */
public final class Interrupts {
  private Interrupts() {}

  /**
   * Whether {@code e} is an interrupt ({@link InterruptedIOException}, {@link
   * ClosedByInterruptException}) of the calling thread, which is still interrupted.
   */
  public static boolean isOwnInterrupt(Throwable e) {
    return (e instanceof InterruptedIOException || e instanceof ClosedByInterruptException)
        && Thread.currentThread().isInterrupted();
  }
}
