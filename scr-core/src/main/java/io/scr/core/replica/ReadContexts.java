package io.scr.core.replica;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * The per-thread {@link ReadContext}s of one engine: one thread-local, and a weak registry of every
 * thread's holder so that {@link #close()} can empty them.
 *
 * <p>Why the registry: a context refers to the whole engine (its spare lease to the cache, slot
 * pools and reader) and holds about 80 KiB of direct memory; a thread-local entry whose key is gone
 * stays in its thread's map until that thread touches its thread-locals again. Closing empties each
 * holder, so a thread's map keeps only an empty shell, and the engine and the buffers go with the
 * garbage collector. Close frees no buffer itself: another thread may be reading into it.
 *
 * <p>Concurrency: {@link #current()} is lock-free after a thread's first call (a thread-local read
 * and a volatile read of the holder). The registry is a synchronized weak set, touched once per
 * thread and by close. The close race is settled by ordering: {@code current()} writes the holder
 * before it reads {@link #closed}, and {@code close()} writes {@code closed} before it empties the
 * holders, so one of the two sees the other and no holder stays filled after close; a read that
 * began before close keeps the context it already holds.
 */
final class ReadContexts {
  private final int scratchBytes;
  private final ThreadLocal<Holder> local = new ThreadLocal<>();

  /** Every thread's holder; weak, so a holder goes with its thread. Guarded by its own monitor. */
  private final Set<Holder> holders =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  private volatile boolean closed;

  ReadContexts(int scratchBytes) {
    if (scratchBytes < 512) {
      throw new IllegalArgumentException("scratch must be at least 512 bytes: " + scratchBytes);
    }
    this.scratchBytes = scratchBytes;
  }

  /**
   * The calling thread's context. After {@link #close()} each call gets a context of its own, which
   * is not kept.
   */
  ReadContext current() {
    Holder h = local.get();
    if (h == null) {
      h = new Holder();
      holders.add(h);
      local.set(h);
    }
    ReadContext c = h.context;
    if (c == null) {
      c = new ReadContext(scratchBytes);
      h.context = c;
      // Written before reading the flag, as close() writes the flag before emptying holders.
      if (closed) {
        h.context = null;
      }
    }
    return c;
  }

  /** Empties every thread's holder (see the class comment); idempotent. */
  void close() {
    closed = true;
    synchronized (holders) {
      for (Holder h : holders) {
        h.context = null;
      }
      holders.clear();
    }
  }

  /**
   * What a thread's thread-local holds: an empty shell once the engine is closed. Static, so it
   * keeps nothing of the engine alive.
   */
  private static final class Holder {
    /** Written by its thread, and emptied by {@link ReadContexts#close()} from another. */
    volatile ReadContext context;
  }
}
