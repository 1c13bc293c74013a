package io.scr.shm.internal;

import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;

/**
 * Whether a failure was caused by the calling thread's own interrupt: the one fact about interrupts
 * the shared-memory module needs (a pool's first segment fetch runs on the reader that builds the
 * pool, and that reader's interrupt is not a failure of the source). What a caller then does about
 * it (for an HDFS stream: nothing demoted, backed off or counted, as {@code
 * DFSInputStream.checkInterrupted}) is the caller's rule, not this module's.
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
