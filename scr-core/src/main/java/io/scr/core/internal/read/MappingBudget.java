package io.scr.core.internal.read;

import com.google.errorprone.annotations.concurrent.GuardedBy;

/**
 * How many block files, and how many bytes of them, may be mapped at once for zero-copy reads (the
 * counterpart of stock's {@code dfs.client.mmap.cache.size}, which bounds idle mappings only; this
 * bounds every live one, idle or lent out). A mapping is charged when a replica's block file is
 * first mapped ({@link ReplicaFiles#mapData}) and given back when that replica closes; a read that
 * would exceed the budget is not served zero-copy and falls back to a copy, counted in {@link
 * #refusals()}.
 *
 * <p>Thread-safety: thread-safe; one monitor, taken only when a mapping is made or released, never
 * on a read that reuses a mapping.
 */
public final class MappingBudget {
  private final int maxMappings;
  private final long maxBytes;

  @GuardedBy("this")
  private int mappings;

  @GuardedBy("this")
  private long bytes;

  @GuardedBy("this")
  private long refusals;

  private MappingBudget(int maxMappings, long maxBytes) {
    this.maxMappings = maxMappings;
    this.maxBytes = maxBytes;
  }

  /**
   * A budget of at most {@code maxMappings} live mappings and {@code maxBytes} mapped bytes; either
   * limit 0 turns zero-copy mapping off.
   *
   * @throws IllegalArgumentException if a limit is negative
   */
  public static MappingBudget of(int maxMappings, long maxBytes) {
    if (maxMappings < 0 || maxBytes < 0) {
      throw new IllegalArgumentException(
          "mapping budget limits must not be negative: " + maxMappings + ", " + maxBytes);
    }
    return new MappingBudget(maxMappings, maxBytes);
  }

  /** Charges one mapping of {@code size} bytes; false (and counted) when it does not fit. */
  synchronized boolean tryAcquire(long size) {
    if (mappings + 1 > maxMappings || size > maxBytes - bytes) {
      refusals++;
      return false;
    }
    mappings++;
    bytes += size;
    return true;
  }

  /** Gives back a mapping of {@code size} bytes charged by {@link #tryAcquire}. */
  synchronized void release(long size) {
    mappings--;
    bytes -= size;
  }

  /** Live mappings charged to this budget. */
  public synchronized int mappings() {
    return mappings;
  }

  /** Bytes of the live mappings charged to this budget. */
  public synchronized long bytes() {
    return bytes;
  }

  /** Mappings refused because the budget was full. */
  public synchronized long refusals() {
    return refusals;
  }

  @Override
  public synchronized String toString() {
    return "MappingBudget{"
        + mappings
        + "/"
        + maxMappings
        + " mappings, "
        + bytes
        + "/"
        + maxBytes
        + " bytes}";
  }
}
