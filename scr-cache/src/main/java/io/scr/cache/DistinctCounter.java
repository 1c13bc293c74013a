package io.scr.cache;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Estimates how many distinct keys were offered since the last reset, by linear counting over a
 * bitmap: {@code n ≈ -m ln(z / m)} for {@code m} bits of which {@code z} are still zero. Accurate
 * to a few percent up to a few times {@code m}. Used on the miss path only (a miss costs a load,
 * far more than one CAS). Thread-safe and lock-free; a reset racing with offers may lose a few of
 * them.
 */
final class DistinctCounter {
  private final AtomicLongArray words;
  private final int bitMask;

  /** Sizes the bitmap to 8 bits per expected key, between 2^12 and 2^22 bits. */
  DistinctCounter(int expectedKeys) {
    long bits = Math.max(1L << 12, Math.min(1L << 22, (long) expectedKeys * 8));
    int m = (int) (Long.highestOneBit(bits - 1) << 1); // a power of two, 2^12..2^22
    this.words = new AtomicLongArray(m >>> 6);
    this.bitMask = m - 1;
  }

  void offer(int hash) {
    int h = hash * 0x9E3779B9;
    h ^= h >>> 15;
    h *= 0x85EBCA6B;
    h ^= h >>> 13;
    int bit = h & bitMask;
    int word = bit >>> 6;
    long mask = 1L << (bit & 63);
    long w = words.get(word);
    while ((w & mask) == 0 && !words.compareAndSet(word, w, w | mask)) {
      w = words.get(word);
    }
  }

  long estimate() {
    int m = bitMask + 1;
    long zeros = 0;
    for (int i = 0; i < words.length(); i++) {
      zeros += 64 - Long.bitCount(words.get(i));
    }
    if (zeros == 0) {
      return (long) (m * Math.log(m)); // saturated: a lower bound
    }
    return Math.round(-m * Math.log((double) zeros / m));
  }

  void reset() {
    for (int i = 0; i < words.length(); i++) {
      words.set(i, 0);
    }
  }
}
