package io.scr.core.hdfs;

import java.util.concurrent.atomic.LongAdder;

/**
 * What one {@link ScrInputStream} did, for tests and diagnostics: its own two read counters and the
 * counters of its parts ({@link ReadFailures}, {@link GrowingTail}, {@link ZeroCopyReads}, {@link
 * DataNodeSteering}), in one place. (The engine-wide figures are the metrics'.)
 *
 * <p>Thread-safety: thread-safe; counters are adders, read without a lock (a sum taken while reads
 * run is a snapshot of some moment during the call).
 */
final class StreamCounters {
  /**
   * Reads (or read segments) served by short-circuit: the stream adds to it directly, so a cache
   * hit runs no method of this class.
   */
  final LongAdder shortCircuitReads = new LongAdder();

  /** Reads (or read segments) handed to the stock stream; the stream adds to it. */
  final LongAdder stockReads = new LongAdder();

  private final ReadFailures failures;
  private final GrowingTail tail;
  private final ZeroCopyReads zeroCopy;
  private final DataNodeSteering steering;

  StreamCounters(
      ReadFailures failures, GrowingTail tail, ZeroCopyReads zeroCopy, DataNodeSteering steering) {
    this.failures = failures;
    this.tail = tail;
    this.zeroCopy = zeroCopy;
    this.steering = steering;
  }

  /** Reads (or read segments) served by short-circuit. */
  long shortCircuitReads() {
    return shortCircuitReads.sum();
  }

  /** Reads (or read segments) handed to the stock stream. */
  long stockReads() {
    return stockReads.sum();
  }

  /** {@link GrowingTail#fallbacks()}. */
  long tailFallbacks() {
    return tail.fallbacks();
  }

  /** {@link GrowingTail#grownLengths()}. */
  long grownLengths() {
    return tail.grownLengths();
  }

  /** {@link DataNodeSteering#steeredReads()}. */
  long steeredReads() {
    return steering.steeredReads();
  }

  /** Short-circuit attempts that failed or were refused and went stock. */
  long fallbacks() {
    return failures.fallbacks();
  }

  /** Of {@link #fallbacks()}, those caused by a checksum mismatch. */
  long checksumFallbacks() {
    return failures.checksumFallbacks();
  }

  /** Reads that found their replica's channel closed under them and leased it again. */
  long reopens() {
    return failures.reopens();
  }

  /** Zero-copy reads served from a mapping of the block file. */
  long zeroCopyReads() {
    return zeroCopy.reads();
  }

  /** Zero-copy reads at a local block that copied instead (see {@link ZeroCopyReads}). */
  long zeroCopyFallbacks() {
    return zeroCopy.fallbacks();
  }

  /** Zero-copy buffers lent out and not released yet. */
  int outstandingZeroCopyBuffers() {
    return zeroCopy.outstanding();
  }
}
