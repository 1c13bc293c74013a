package io.scr.core.internal.read;

import java.io.IOException;

/**
 * A read of a replica being written could not serve the bytes it was asked for short-circuit, for a
 * reason that is the writer's doing, not the replica's: the bytes are visible but not yet on disk
 * with their checksums, or the tail moved between reading the data and reading its checksum. Never
 * a corruption: the caller reads those bytes the stock way (whose DataNode waits for the bytes and
 * sends the checksum it keeps in memory) and tries short-circuit again on the next read.
 */
public final class TailNotReadyException extends IOException {
  private static final long serialVersionUID = 1L;

  /** Why the bytes could not be served. */
  public enum Reason {
    /** The visible length is ahead of the bytes on disk (acknowledged before written). */
    NOT_ON_DISK,
    /**
     * The bytes do not match the checksum read for them: the last chunk was extended and its
     * checksum rewritten in between, or a recovery truncated the tail.
     */
    TAIL_MOVED,
    /**
     * Only whole chunks can be verified without the DataNode's in-memory checksum, and the request
     * starts in the partial last chunk.
     */
    PARTIAL_CHUNK,
    /**
     * The DataNode's replica has another generation stamp than the one leased (pipeline recovery,
     * append): the cached replica was dropped, and new fds need the block's new generation stamp.
     */
    REPLICA_CHANGED
  }

  private final Reason reason;

  public TailNotReadyException(Reason reason, String message) {
    super(message + " (" + reason + "; the bytes are read the stock way, not reported corrupt)");
    this.reason = reason;
  }

  /** Why the bytes could not be served. */
  public Reason reason() {
    return reason;
  }
}
