package io.scr.core.internal.replica;

import io.scr.core.internal.read.ReadScratch;

/**
 * One thread's state for reading replicas of one engine: the thread's spare lease (a closed lease
 * the next read reopens, so a cache hit allocates nothing) and its {@link ReadScratch}. Obtained
 * with {@link ReplicaSource#readContext()}; a reader passes it to {@link ReplicaSource#lease(
 * ReadContext, org.apache.hadoop.hdfs.protocol.ExtendedBlock,
 * org.apache.hadoop.security.token.Token, String, String)} and {@link ReplicaSource#release}.
 *
 * <p>Thread-safety: confined to its thread ({@link #owner()}); the engine's close empties the
 * thread's holder from another thread, never the context itself, so a read in progress keeps its
 * buffers and its lease (see {@link ReplicaSource}).
 */
public final class ReadContext {
  private final Thread owner;
  private final int scratchBytes;
  private ReadScratch scratch;

  /** The closed lease the next {@link ReplicaSource#lease} on this thread reopens, or null. */
  LeasedReplica spare;

  /**
   * A context of the calling thread, with a scratch of {@code scratchBytes} made on first use. An
   * engine keeps one per thread ({@link ReplicaSource#readContext()}); a caller that makes its own
   * keeps it on this thread.
   */
  public ReadContext(int scratchBytes) {
    this.owner = Thread.currentThread();
    this.scratchBytes = scratchBytes;
  }

  /** The thread this context belongs to. */
  public Thread owner() {
    return owner;
  }

  /** This thread's read buffers (made on first use). */
  public ReadScratch scratch() {
    ReadScratch s = scratch;
    if (s == null) {
      s = new ReadScratch(scratchBytes);
      scratch = s;
    }
    return s;
  }

  /** Whether the calling thread is this context's. */
  boolean isCurrentThread() {
    return owner == Thread.currentThread();
  }
}
