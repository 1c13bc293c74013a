package io.scr.core.internal.read;

import io.scr.core.ScrKeys;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The policy and counters of mapped reads: a {@link LocalBlockReader} given one copies the bytes of
 * a hot replica from a mapping of its block file instead of making a {@code pread}, then verifies
 * the covering checksum chunks over the copy exactly as after a {@code pread}. No syscall on such a
 * read (the checksums come from the mapped meta file).
 *
 * <p><b>Hot.</b> A replica is mapped on its {@link #minReads()}th read (counted per open replica,
 * approximately: the count is racy by design, it only decides when to map), or read from its
 * mapping at once when its block file is mapped already (a zero-copy read mapped it). The mapping
 * is the replica's one block-file mapping ({@link ReplicaFiles#mapData}'s), charged to {@link
 * #budget()} when this policy made it and released with the replica, the same way.
 *
 * <p><b>Fallback.</b> When a hot replica cannot be mapped (the budget is full, mapping is
 * unavailable in this JVM or failed, or the read lies past 2 GiB into the block file) the read is a
 * {@code pread} as without this policy, counted in {@link #fallbacks()} and logged once. A replica
 * whose mapping was refused asks the budget again only every {@value #RETRY_INTERVAL} reads, so a
 * full budget costs no lock per read.
 *
 * <p><b>The risk, and why this is off by default.</b> A page of a mapping has no file behind it
 * once the DataNode truncates the block file (block recovery, an in-place truncate) or the disk
 * fails to read it: touching it raises {@code SIGBUS}, which the JVM turns into an {@code
 * InternalError} in the reading thread. The copy is an {@code Unsafe} copy, so the JVM survives it.
 * In compiled code the JVM delivers the error asynchronously, at a later safepoint of that thread
 * ({@code MappedBlockReadTest} saw it in the same read, during the checksum lookup or CRC after the
 * copy): {@link LocalBlockReader} turns one that reaches it during the read into an {@code
 * IOException}, as it does any {@code RuntimeException} of such a read once the block file is found
 * shorter (code after the aborted copy may fail otherwise), and a CRC mismatch over a truncated
 * block file into an {@code EOFException} rather than a checksum error. But nothing bounds where
 * the JVM delivers it: possibly after the read returned, in the application's code, where nothing
 * of scr can catch it. Checking the file's size before each read (an {@code fstat}) would cost the
 * syscall this read exists to save. Only finalized replicas are leased, and nothing past the
 * replica's length at open is mapped or read, so the risk is a truncation of a finalized block
 * under a reader, or a disk error, both rare; see docs/operations.md.
 *
 * <p>Thread-safety: thread-safe; the counters are {@link LongAdder}s.
 */
public final class MappedReads {
  private static final Logger LOG = LoggerFactory.getLogger(MappedReads.class);

  /** Reads of a replica whose mapping was refused before it asks the budget again. */
  static final int RETRY_INTERVAL = 1024;

  private final MappingBudget budget;
  private final int minReads;
  private final LongAdder reads = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();
  private final AtomicBoolean fallbackLogged = new AtomicBoolean();

  private MappedReads(MappingBudget budget, int minReads) {
    this.budget = budget;
    this.minReads = minReads;
  }

  /**
   * A policy that maps a replica on its {@code minReads}th read, charging the mappings it makes to
   * {@code budget}.
   *
   * @throws IllegalArgumentException if {@code minReads} is less than 1
   */
  public static MappedReads of(MappingBudget budget, int minReads) {
    if (minReads < 1) {
      throw new IllegalArgumentException("minReads must be at least 1: " + minReads);
    }
    return new MappedReads(java.util.Objects.requireNonNull(budget, "budget"), minReads);
  }

  /** The budget the block-file mappings this policy makes are charged to. */
  public MappingBudget budget() {
    return budget;
  }

  /** The read of a replica on which its block file is mapped (1: the first). */
  public int minReads() {
    return minReads;
  }

  /** Reads served by a copy from a block-file mapping (no {@code pread}). */
  public long reads() {
    return reads.sum();
  }

  /** Reads of hot replicas served by {@code pread} because their block file could not be mapped. */
  public long fallbacks() {
    return fallbacks.sum();
  }

  void recordRead() {
    reads.increment();
  }

  void recordFallback(ReplicaFiles replica, String why) {
    fallbacks.increment();
    if (fallbackLogged.compareAndSet(false, true)) {
      LOG.warn(
          "mapped reads fall back to pread for {} ({}; {}); counted in MappedReadFallbacks, logged"
              + " once. A full budget: raise "
              + ScrKeys.READ_MAPPED_MAX_MAPPINGS.name()
              + " or"
              + " "
              + ScrKeys.READ_MAPPED_MAX_MAPPED_BYTES.name(),
          replica.blockName(),
          why,
          budget);
    }
  }

  @Override
  public String toString() {
    return "MappedReads{minReads=" + minReads + ", " + budget + "}";
  }
}
