package io.scr.shm;

import java.util.concurrent.ThreadLocalRandom;

/**
 * The 128-bit id of a shared-memory segment, as Hadoop's {@code ShmId}: two longs that the creator
 * picks at random and sends to the user with the fd. Immutable; ordered by {@code hi} then {@code
 * lo} (signed), like Hadoop.
 */
public final class ShmId implements Comparable<ShmId> {
  private final long hi;
  private final long lo;

  private ShmId(long hi, long lo) {
    this.hi = hi;
    this.lo = lo;
  }

  /** The id with these two halves (for ids received on the wire). */
  public static ShmId of(long hi, long lo) {
    return new ShmId(hi, lo);
  }

  /** A random id; the creator must still check it is not already in use. */
  public static ShmId random() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return new ShmId(r.nextLong(), r.nextLong());
  }

  /** The high 64 bits. */
  public long hi() {
    return hi;
  }

  /** The low 64 bits. */
  public long lo() {
    return lo;
  }

  @Override
  public int compareTo(ShmId o) {
    int c = Long.compare(hi, o.hi);
    return c != 0 ? c : Long.compare(lo, o.lo);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ShmId)) {
      return false;
    }
    ShmId other = (ShmId) o;
    return hi == other.hi && lo == other.lo;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(hi) * 31 + Long.hashCode(lo);
  }

  /** 32 hex digits, as Hadoop prints it. */
  @Override
  public String toString() {
    return String.format("%016x%016x", hi, lo);
  }
}
