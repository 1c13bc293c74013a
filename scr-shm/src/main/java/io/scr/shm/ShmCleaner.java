package io.scr.shm;

import java.lang.ref.Cleaner;

/**
 * The one {@link Cleaner} of this module, shared by {@link Segment} (unmaps a forgotten mapping)
 * and {@link SharedMemoryFd} (closes a forgotten fd): a single daemon thread named {@value
 * #THREAD_NAME}, started on first use and kept for the JVM's life, so leak checks can recognise it
 * by name. It is the last line of defence, never the plan: both classes log when it has to act.
 */
final class ShmCleaner {
  /** The cleaner thread's name (listed as a JVM singleton by scr-testing's leak check). */
  static final String THREAD_NAME = "scr-shm-cleaner";

  /** Cleaner.create sets the thread daemon and starts it. */
  static final Cleaner INSTANCE = Cleaner.create(r -> new Thread(r, THREAD_NAME));

  private ShmCleaner() {}
}
