package io.scr.shm.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Slot words in a Java {@code long[]}, with the same orderings as the mapped ones: a test double
 * for model checking, whose array accesses Lincheck sees and interleaves (it does not see accesses
 * through the byte-buffer view that mapped words use). Offsets are in bytes, multiples of 8.
 */
public final class HeapWords extends SharedWords {
  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  private final long[] words;

  public HeapWords(int length) {
    this.words = new long[length / 8];
  }

  @Override
  public int length() {
    return words.length * 8;
  }

  @Override
  public long loadVolatile(int offset) {
    return (long) LONGS.getVolatile(words, offset >>> 3);
  }

  @Override
  public void storeVolatile(int offset, long value) {
    LONGS.setVolatile(words, offset >>> 3, value);
  }

  @Override
  public long loadPlain(int offset) {
    return (long) LONGS.get(words, offset >>> 3);
  }

  @Override
  public boolean compareAndSetLong(int offset, long expected, long update) {
    return LONGS.compareAndSet(words, offset >>> 3, expected, update);
  }

  @Override
  public byte loadByte(int offset) {
    throw new UnsupportedOperationException("byte layout is pinned on mapped words only");
  }
}
