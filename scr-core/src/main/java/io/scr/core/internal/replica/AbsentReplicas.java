package io.scr.core.internal.replica;

import io.scr.cache.Ticker;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;

/**
 * A bounded memory of "the local DataNode at this socket does not hold this replica": keys of
 * (block pool, block id, generation stamp, socket path) that a DataNode refused because it has no
 * such replica, so that each local DataNode is asked at most once per block (per {@linkplain
 * Builder#expiry expiry}) instead of once per read. Without it every read of a block held only by
 * another DataNode costs an op-87 round trip that is refused.
 *
 * <p>Only that refusal is remembered (the caller decides: {@link
 * io.scr.core.internal.net.ShortCircuitRefusedException#replicaAbsent()}); token errors, I/O errors
 * and backoff are not. A new generation stamp is a new key. An entry expires after {@link
 * Builder#expiry} (default {@value #DEFAULT_EXPIRY_SECONDS} s), because the balancer or a
 * re-replication can later put the replica on the local DataNode: stale memory then only costs the
 * stock read path until it expires, never a wrong byte.
 *
 * <p>Bounded in entries: a {@value #WAYS}-way set-associative table of {@link Builder#capacity}
 * slots (default {@value #DEFAULT_CAPACITY}). A new key takes an empty or expired slot of its set,
 * else the set's entry that expires first; a lost entry costs one more refused request later.
 *
 * <p>Concurrency: lock-free. Each slot holds an immutable entry, replaced by a plain volatile
 * write; {@link #isAbsent} reads at most {@value #WAYS} slots and allocates nothing. Two threads
 * remembering into one set at once may overwrite each other's entry (benign: one more request
 * later). Counters are {@link LongAdder}s.
 */
public final class AbsentReplicas {
  /** Entries per set. */
  static final int WAYS = 4;

  /** Default number of entries. */
  public static final int DEFAULT_CAPACITY = 8192;

  /** Default time an entry is trusted, seconds. */
  public static final long DEFAULT_EXPIRY_SECONDS = 60;

  private final AtomicReferenceArray<Entry> slots;
  private final int setMask;
  private final long expiryNanos;
  private final Ticker ticker;
  private final LongAdder remembered = new LongAdder();
  private final LongAdder avoided = new LongAdder();

  private AbsentReplicas(Builder b) {
    int sets = Integer.highestOneBit(Math.max(1, b.capacity / WAYS));
    this.slots = new AtomicReferenceArray<>(sets * WAYS);
    this.setMask = sets - 1;
    this.expiryNanos = b.expiryNanos;
    this.ticker = b.ticker;
  }

  /** A builder with the defaults. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /** Most entries held at once. */
  public int capacity() {
    return slots.length();
  }

  /**
   * Whether the DataNode at {@code socketPath} refused {@code block} (this generation stamp) as not
   * held there within the expiry. A true answer is counted as a request avoided.
   */
  public boolean isAbsent(ExtendedBlock block, String socketPath) {
    if (remembers(block, socketPath)) {
      avoided.increment();
      return true;
    }
    return false;
  }

  /**
   * As {@link #isAbsent} without counting a request avoided: for a caller that asks why a lease it
   * was refused (the refusal was counted already).
   */
  public boolean remembers(ExtendedBlock block, String socketPath) {
    String bpid = block.getBlockPoolId();
    long id = block.getBlockId();
    long gs = block.getGenerationStamp();
    int base = setOf(bpid, id, gs, socketPath);
    long now = Long.MIN_VALUE;
    for (int i = 0; i < WAYS; i++) {
      Entry e = slots.get(base + i);
      if (e != null && e.matches(bpid, id, gs, socketPath)) {
        if (now == Long.MIN_VALUE) {
          now = ticker.read();
        }
        if (now - e.expiresAtNanos < 0) {
          return true;
        }
      }
    }
    return false;
  }

  /** Remembers that the DataNode at {@code socketPath} does not hold {@code block}. */
  public void remember(ExtendedBlock block, String socketPath) {
    String bpid = block.getBlockPoolId();
    long id = block.getBlockId();
    long gs = block.getGenerationStamp();
    long now = ticker.read();
    Entry fresh = new Entry(bpid, id, gs, socketPath, now + expiryNanos);
    int base = setOf(bpid, id, gs, socketPath);
    int victim = base;
    long victimExpiry = Long.MAX_VALUE;
    for (int i = 0; i < WAYS; i++) {
      Entry e = slots.get(base + i);
      if (e == null || e.matches(bpid, id, gs, socketPath) || now - e.expiresAtNanos >= 0) {
        victim = base + i;
        break;
      }
      if (e.expiresAtNanos - victimExpiry < 0) {
        victim = base + i;
        victimExpiry = e.expiresAtNanos;
      }
    }
    slots.set(victim, fresh);
    remembered.increment();
  }

  /** Forgets every entry (e.g. when the engine learns the DataNodes changed). */
  public void clear() {
    for (int i = 0; i < slots.length(); i++) {
      slots.set(i, null);
    }
  }

  /** Refusals remembered so far. */
  public long rememberedCount() {
    return remembered.sum();
  }

  /** Fd requests not sent because the memory answered (each would have been refused). */
  public long avoidedCount() {
    return avoided.sum();
  }

  /** Entries held now that have not expired (a scan, for tests and diagnostics). */
  public int size() {
    long now = ticker.read();
    int n = 0;
    for (int i = 0; i < slots.length(); i++) {
      Entry e = slots.get(i);
      if (e != null && now - e.expiresAtNanos < 0) {
        n++;
      }
    }
    return n;
  }

  private int setOf(String bpid, long id, long gs, String path) {
    long h = id * 0x9E3779B97F4A7C15L + gs;
    h ^= (long) bpid.hashCode() * 0xC2B2AE3D27D4EB4FL;
    h ^= (long) path.hashCode() * 0x165667B19E3779F9L;
    h ^= h >>> 29;
    h *= 0xBF58476D1CE4E5B9L;
    h ^= h >>> 32;
    return ((int) h & setMask) * WAYS;
  }

  /** One remembered refusal. Immutable. */
  private static final class Entry {
    final String bpid;
    final long blockId;
    final long generationStamp;
    final String socketPath;
    final long expiresAtNanos;

    Entry(String bpid, long blockId, long generationStamp, String socketPath, long expiresAt) {
      this.bpid = bpid;
      this.blockId = blockId;
      this.generationStamp = generationStamp;
      this.socketPath = socketPath;
      this.expiresAtNanos = expiresAt;
    }

    boolean matches(String bpid, long id, long gs, String path) {
      return blockId == id
          && generationStamp == gs
          && socketPath.equals(path)
          && this.bpid.equals(bpid);
    }
  }

  /** Configuration of an {@link AbsentReplicas}. Not thread-safe. */
  public static final class Builder {
    private int capacity = DEFAULT_CAPACITY;
    private long expiryNanos = TimeUnit.SECONDS.toNanos(DEFAULT_EXPIRY_SECONDS);
    private Ticker ticker = Ticker.systemTicker();

    private Builder() {}

    /** Most entries (rounded down to a power of two, at least {@value #WAYS}). */
    public Builder capacity(int entries) {
      if (entries < WAYS) {
        throw new IllegalArgumentException("capacity must be >= " + WAYS + ": " + entries);
      }
      this.capacity = entries;
      return this;
    }

    /** How long a refusal is trusted (> 0). */
    public Builder expiry(long duration, TimeUnit unit) {
      if (duration <= 0) {
        throw new IllegalArgumentException("expiry must be > 0: " + duration + " " + unit);
      }
      this.expiryNanos = unit.toNanos(duration);
      return this;
    }

    /** Time source for the expiry. */
    public Builder ticker(Ticker ticker) {
      this.ticker = java.util.Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** The memory. */
    public AbsentReplicas build() {
      return new AbsentReplicas(this);
    }
  }
}
