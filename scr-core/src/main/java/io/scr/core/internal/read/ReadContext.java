package io.scr.core.internal.read;

import io.scr.core.ReplicaLease;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;

/**
 * One thread's state for reading replicas of one engine: the thread's spare lease (a closed lease
 * the next lease on this thread reopens, so a cache hit allocates nothing) and its buffers for
 * {@link LocalBlockReader}: a direct data scratch of the configured size (unaligned checksummed
 * reads, and every heap read that fits it), a direct buffer for the covering checksums, the two CRC
 * engines, this thread's views of block-file mappings, and one reusable heap wrapper for the
 * caller's last small {@code byte[]}. An engine keeps one per thread ({@code
 * io.scr.core.internal.replica.ReplicaSource#readContext()}); a reader passes it to the source's
 * lease and release and to the block readers.
 *
 * <p>It also holds how the thread's last local read ({@code
 * io.scr.core.internal.replica.LocalRead#read}) ended: {@link #stop()}, with its cause and the
 * socket of the replica it read, for the caller to act on (demote, report, refetch a token).
 *
 * <p>Thread-safety: confined to its thread ({@link #owner()}); nothing here is shared. The engine's
 * close empties the thread's holder from another thread, never the context itself, so a read in
 * progress keeps its buffers and its lease. Holds up to {@code size + 16 KiB} of direct memory
 * (each buffer made on first use), freed by the garbage collector once its holder drops it: nothing
 * here is closed.
 */
public final class ReadContext {
  /** Why the thread's last local read ended before the range it was asked for. */
  public enum Stop {
    /** It did not: the whole range was read, or the replica ended (the caller reads on stock). */
    NONE,
    /** No lease: the engine counted the reason; {@link #stopCause()} may hold an open failure. */
    NO_LEASE,
    /** The DataNode rejected the block token ({@link #stopCause()}: the {@code InvalidToken}). */
    BAD_TOKEN,
    /** A checksum mismatch in the replica of {@link #stopSocket()} ({@code ChecksumException}). */
    CORRUPT,
    /** An I/O failure reading the replica of {@link #stopSocket()}. */
    FAILED,
    /** The block being written cannot serve these bytes now: the writer's race, not a fault. */
    NOT_READY
  }

  /** Most checksum chunks one read covers (the checksum buffer holds as many sums). */
  static final int MAX_CHUNKS_PER_READ = 4096;

  private static final int VIEWS = 16;

  private final Thread owner;
  private final int size;

  private Stop stop = Stop.NONE;
  private IOException stopCause;
  private String stopSocket;
  private boolean reopened;

  /** The closed lease the next lease on this thread reopens, or null. */
  private ReplicaLease spare;

  /** The buffer {@link #data(int)} returned last; allocated on first use. */
  private ByteBuffer data;

  /** The checksums of a read's covering chunks, when they are not in memory; on first use. */
  private ByteBuffer sums;

  /** Index of the first checksum in the buffer {@code readSums} returned last. */
  int sumsBase;

  final CRC32C crc32c = new CRC32C();
  final CRC32 crc32 = new CRC32();

  /**
   * Views of the block-file mappings this thread read last, for mapped reads, so that a read
   * allocates nothing (a duplicate is 48 bytes): a small cache by identity hash, since random reads
   * move among replicas. It keeps up to {@value #VIEWS} mappings reachable (their address ranges,
   * zero pages once their replicas closed) until another mapping takes the entry or the context is
   * dropped.
   */
  private final ByteBuffer[] views = new ByteBuffer[VIEWS];

  private final MappedByteBuffer[] viewOf = new MappedByteBuffer[VIEWS];

  /** The array {@link #wrap} wrapped last (at most {@link #size} bytes long), or null. */
  private byte[] wrappedArray;

  private ByteBuffer wrapped;

  /**
   * A context of the calling thread. An engine keeps one per thread; a caller that makes its own
   * keeps it on this thread.
   *
   * @param size bytes of the data scratch: unaligned checksummed reads are served in pieces of at
   *     most this size, and a heap read that fits it goes through it
   */
  public ReadContext(int size) {
    if (size < 512) {
      throw new IllegalArgumentException("scratch must be at least 512 bytes: " + size);
    }
    this.owner = Thread.currentThread();
    this.size = size;
  }

  /** The thread this context belongs to. */
  public Thread owner() {
    return owner;
  }

  /** Whether the calling thread is this context's. */
  public boolean isCurrentThread() {
    return owner == Thread.currentThread();
  }

  /** The thread's spare lease (closed, for its engine to reopen), or null. */
  public ReplicaLease spareLease() {
    return spare;
  }

  /**
   * Sets the thread's spare lease: a closed lease nobody else refers to, or null when the engine
   * took it for a lease.
   */
  public void spareLease(ReplicaLease lease) {
    this.spare = lease;
  }

  /** Clears how the last local read ended: a new one starts. */
  public void startRead() {
    stop = Stop.NONE;
    stopCause = null;
    stopSocket = null;
    reopened = false;
  }

  /** Records why this read ended early, with the failure and the socket of its replica. */
  public void stopped(Stop why, IOException cause, String socketPath) {
    stop = why;
    stopCause = cause;
    stopSocket = socketPath;
  }

  /** Records that this read found its replica's channel closed under it and leased it again. */
  public void reopened() {
    reopened = true;
  }

  /** Why the last local read ended early; {@link Stop#NONE} when it did not. */
  public Stop stop() {
    return stop;
  }

  /** The failure that ended the last local read early, or null. */
  public IOException stopCause() {
    return stopCause;
  }

  /** The socket path of the replica the last local read failed in, or null. */
  public String stopSocket() {
    return stopSocket;
  }

  /** Whether the last local read leased its replica again after a channel closed under it. */
  public boolean wasReopened() {
    return reopened;
  }

  /** Bytes of the data scratch. */
  public int size() {
    return size;
  }

  /**
   * {@code buf[off, off + len)} as a heap buffer (position {@code off}, limit {@code off + len}).
   * An array no longer than the scratch is wrapped once and its wrapper reused while the caller
   * reads into the same array, so a read into a reused {@code byte[]} allocates nothing; a longer
   * one is wrapped per call (48 bytes beside a copy of more than the scratch size), so this never
   * keeps a large caller array reachable. The wrapper is the thread's only one: the stream wraps
   * once, at the top of a read, and nothing it calls wraps again on this thread.
   */
  public ByteBuffer wrap(byte[] buf, int off, int len) {
    if (buf.length > size) {
      return ByteBuffer.wrap(buf, off, len);
    }
    ByteBuffer w = wrapped;
    if (wrappedArray != buf) {
      w = ByteBuffer.wrap(buf);
      wrapped = w;
      wrappedArray = buf;
    }
    w.limit(off + len).position(off);
    return w;
  }

  ByteBuffer sums() {
    ByteBuffer b = sums;
    if (b == null) {
      b = ByteBuffer.allocateDirect(MAX_CHUNKS_PER_READ * 4);
      sums = b;
    }
    return b;
  }

  ByteBuffer data(int bytesPerChecksum) {
    int needed = Math.max(size, bytesPerChecksum);
    if (data == null || data.capacity() < needed) {
      data = ByteBuffer.allocateDirect(needed);
    }
    return data;
  }

  /** This thread's view of {@code map}, its position and limit free for the caller to set. */
  ByteBuffer view(MappedByteBuffer map) {
    int i = System.identityHashCode(map) & (VIEWS - 1);
    if (viewOf[i] != map) {
      viewOf[i] = map;
      views[i] = map.duplicate();
    }
    return views[i];
  }
}
