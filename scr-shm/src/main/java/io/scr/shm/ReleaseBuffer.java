package io.scr.shm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The list handed to the {@link SlotReleaser}, and scratch space for the bits being told: reused
 * per thread so that telling a release allocates nothing. Valid only during the releaser call
 * (documented on {@link SlotReleaser}). Confined to one thread between {@link #acquire} and {@link
 * #recycle}.
 */
final class ReleaseBuffer {
  private static final ThreadLocal<ReleaseBuffer> PER_THREAD = new ThreadLocal<>();

  final ArrayList<SlotId> ids;
  final List<SlotId> view;
  private long[] words = new long[2];
  private boolean inUse;

  private ReleaseBuffer() {
    ids = new ArrayList<>(64);
    view = Collections.unmodifiableList(ids);
  }

  /** This thread's buffer, or a fresh one if it is in use (a releaser that re-entered). */
  static ReleaseBuffer acquire() {
    ReleaseBuffer b = PER_THREAD.get();
    if (b == null) {
      b = new ReleaseBuffer();
      PER_THREAD.set(b);
    } else if (b.inUse) {
      b = new ReleaseBuffer();
    }
    b.inUse = true;
    return b;
  }

  /** A zeroed scratch array of at least {@code n} words. */
  long[] words(int n) {
    if (words.length < n) {
      words = new long[n];
    }
    return words;
  }

  void recycle() {
    ids.clear();
    Arrays.fill(words, 0L);
    inUse = false;
  }
}
