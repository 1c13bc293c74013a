package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.ReplicaLease;
import io.scr.core.ScrClient;
import io.scr.core.read.MappingBudget;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.ByteBufferUtil;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.ScrDfsInputStreamBase;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.io.ByteBufferPool;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The input stream of {@link ScrFileSystem}: a stock {@code DFSInputStream} whose reads of local,
 * finalized blocks go straight to the replica through {@link ScrClient} (one lease per read, no
 * BlockReader), and whose every other read — remote replicas, the block being written, a failed or
 * refused short-circuit read — is the stock stream's own code.
 *
 * <p><b>Which way a read goes.</b> Each read looks its offset up in a {@link BlockTable} snapshot
 * (binary search over arrays; no allocation). A block with a local socket path is read through a
 * lease; the rest of the range, block by block, goes to the stock pread or stateful read. A read
 * spanning blocks may mix both; the bytes returned are the same either way.
 *
 * <p><b>Refresh.</b> The table is rebuilt when the stock stream replaced its {@code locatedBlocks}
 * (open-info refresh, periodic location refresh), when a read needs a block the table does not hold
 * yet (the stock stream fetches it from the NameNode), after a short-circuit failure, and after an
 * {@code InvalidToken} (the block's locations and token are refetched first).
 *
 * <p><b>Failures are transient unless they prove otherwise.</b> A failed or refused short-circuit
 * read sends the rest of that read to the stock path, and every decision it leads to has a bound:
 *
 * <ul>
 *   <li>The DataNode's socket backing off (after a connect or I/O failure): checked when the read
 *       leases, so the block short-circuits again on the first read after the backoff; nothing is
 *       remembered by the stream.
 *   <li>A null lease for another reason (block refused, fd budget) or an I/O error from the
 *       replica: the block is demoted for {@value #DEMOTION_MILLIS} ms (by identity of its {@link
 *       LocatedBlock}), then tried again; a refresh of its locations lifts it at once.
 *   <li>The reading thread's own interrupt ({@code ClosedByInterruptException} or {@code
 *       InterruptedIOException} on an interrupted thread, stock's rule): the read throws it and
 *       nothing is demoted, backed off or dropped.
 *   <li>A replica channel closed under the read by someone else (another thread's interrupt on a
 *       JVM where channels stay interruptible, see {@code UninterruptibleChannels}): the read
 *       leases again once (the cache has replaced the replica) and goes on short-circuit.
 *   <li>A {@link ChecksumException}: reported to the NameNode against the DataNode the lease names
 *       ({@link ReplicaLease#socketPath()}), with stock's rule; that DataNode is kept off the stock
 *       fallback when the block has other replicas; the block stays stock until its locations are
 *       refreshed (corruption does not heal by waiting).
 * </ul>
 *
 * <p>Counted in {@link #fallbacks()}, {@link #checksumFallbacks()} and {@link #reopens()}; a read
 * of a block no local DataNode holds counts {@code NOT_LOCAL} (or why else it has no socket) in the
 * engine's fallback counters, once per read.
 *
 * <p><b>Statistics.</b> Short-circuit bytes are added to the stock {@code ReadStatistics} with
 * {@code addShortCircuitBytes} (so {@code HdfsDataInputStream.getReadStatistics()} shows them) and
 * to the file system's {@code FileSystem.Statistics} at distance 0, as a stock local reader would.
 *
 * <p><b>Concurrency.</b> Positional reads may run concurrently (HBase does): they share only the
 * volatile, immutable table and thread-safe counters, and take a lease each, reusing the reading
 * thread's spare lease object ({@link ScrClient#leaseWithThreadSpare}), so the hit path allocates
 * nothing whichever threads read whichever streams. Stateful reads hold the stream monitor, as
 * stock does. {@code tableLock} serializes rebuilds; lock order is stream monitor, then {@code
 * tableLock}, then the stock {@code infoLock}. Reading the stock {@code locatedBlocks} field
 * without {@code infoLock} to detect a replacement is a benign race: a stale view only delays the
 * rebuild to the next read, and the old table's blocks are still valid.
 *
 * <p><b>Zero-copy reads</b> ({@code HasEnhancedByteBufferAccess}, stock's semantics): {@link
 * #read(ByteBufferPool, int, EnumSet)} at a local block returns a read-only slice of a mapping of
 * the block file ({@link io.scr.core.read.ReplicaFiles#mapData}), from the stream's position to at
 * most {@code maxLength} bytes and never past the block's end, when checksums are skipped ({@link
 * ReadOption#SKIP_CHECKSUMS} or the stream's verification off) or the replica can be anchored (the
 * DataNode has the block cached: the anchor is held until the buffer is released, as stock's {@code
 * ClientMmap} holds it). The buffer keeps a lease on its replica until {@link #releaseBuffer}, so
 * the replica, and with it the mapping, is closed only after the last buffer lent from it was given
 * back. Otherwise (remote block, no anchor, the {@link MappingBudget} full, the block file
 * truncated, stock's {@code dfs.client.mmap.enabled} false) the read copies through the caller's
 * pool, as stock's {@code ByteBufferUtil.fallbackRead} does (across blocks, up to {@code
 * maxLength}), through this stream's own short-circuit reads; with no pool that is stock's {@code
 * UnsupportedOperationException}. Each such fallback at a local block is counted in {@link
 * #zeroCopyFallbacks()}, and the first one of each kind in the process is logged. No stock block
 * reader is made.
 *
 * <p><b>Prefetch on open.</b> {@link ScrFileSystem} calls {@link #prefetch} right after it made the
 * stream: the replicas of the first {@code scr.client.prefetch.max-blocks} local blocks are opened
 * ahead by one task on the engine's prefetch threads ({@link OpenPrefetch}: one exchange after
 * another on one connection, or one batched exchange with a shim that offers it), so their first
 * reads here are cache hits; a read of a block whose turn has not come opens it itself, a read of
 * the block being opened shares that open; {@link #close()} cancels those that have not run yet.
 *
 * <p><b>Resources.</b> Holds no fds or sockets between reads, apart from the leases of zero-copy
 * buffers not yet released: each other lease is closed before the read returns, and the cached
 * replicas belong to the {@link ScrClient}. {@link #unbuffer()} therefore releases only the stock
 * block reader and its socket, keeping the engine's cached fds. {@link #close()} gives back the
 * leases of buffers the caller never released (logging them, as stock does): a released replica's
 * mapping then reads as zeros rather than faulting.
 */
final class ScrInputStream extends ScrDfsInputStreamBase {
  private static final Logger LOG = LoggerFactory.getLogger(ScrInputStream.class);

  /** How long a block whose short-circuit read failed goes the stock way before it is retried. */
  static final long DEMOTION_MILLIS = 1000;

  private static final long DEMOTION_NANOS = TimeUnit.MILLISECONDS.toNanos(DEMOTION_MILLIS);

  private final ScrClient scr;
  private final Ticker ticker;
  private final Object tableLock = new Object();

  /**
   * Blocks whose short-circuit read failed (by identity), with the ticker time until which they go
   * stock; Long.MAX_VALUE: until their locations are refreshed.
   */
  @GuardedBy("tableLock")
  private final Map<LocatedBlock, Long> demotedUntil = new IdentityHashMap<>();

  private volatile BlockTable table = BlockTable.EMPTY;

  /** The replica opens {@link #prefetch} queued, cancelled by {@link #close()}; null if none. */
  private volatile OpenPrefetch prefetch;

  private final LongAdder shortCircuitReads = new LongAdder();
  private final LongAdder stockReads = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();
  private final LongAdder checksumFallbacks = new LongAdder();
  private final LongAdder reopens = new LongAdder();
  private final LongAdder zeroCopyReads = new LongAdder();
  private final LongAdder zeroCopyFallbacks = new LongAdder();

  /** The first zero-copy fallback of each {@link NoZeroCopy} kind in the process is logged. */
  private static final AtomicBoolean[] LOGGED = {
    new AtomicBoolean(), new AtomicBoolean(), new AtomicBoolean(), new AtomicBoolean()
  };

  private final MappingBudget mappingBudget;

  /** Zero-copy buffers lent out and not released yet, each with the lease that keeps it valid. */
  @GuardedBy("this")
  private final Map<ByteBuffer, Loan> zeroCopyBuffers = new IdentityHashMap<>();

  /** Buffers a zero-copy fallback filled, with the pool they go back to. */
  @GuardedBy("this")
  private final Map<ByteBuffer, ByteBufferPool> copiedBuffers = new IdentityHashMap<>();

  ScrInputStream(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      ScrClient scr)
      throws IOException {
    this(client, src, verifyChecksum, locatedBlocks, scr, Ticker.systemTicker());
  }

  /** As the other constructors, with the budget of block-file mappings zero-copy reads use. */
  ScrInputStream(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      ScrClient scr,
      MappingBudget mappingBudget)
      throws IOException {
    this(client, src, verifyChecksum, locatedBlocks, scr, Ticker.systemTicker(), mappingBudget);
  }

  /** As the other constructor, with the time source demotions are measured with. */
  ScrInputStream(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      ScrClient scr,
      Ticker ticker)
      throws IOException {
    this(
        client, src, verifyChecksum, locatedBlocks, scr, ticker, ScrFileSystem.mappingBudget(null));
  }

  private ScrInputStream(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      ScrClient scr,
      Ticker ticker,
      MappingBudget mappingBudget)
      throws IOException {
    super(client, src, verifyChecksum, locatedBlocks);
    this.scr = scr;
    this.ticker = ticker;
    this.mappingBudget = mappingBudget;
  }

  // ------------------------------------------------------------------ positional reads

  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    validatePositionedReadArgs(position, buffer, offset, length);
    if (length == 0) {
      return 0;
    }
    checkReadable();
    // The hit path: the current table has the whole range in one short-circuit block, which ends
    // within the finalized length, so the file length (behind the stock infoLock) is not needed.
    BlockTable hit = table;
    int triedLocal = -1; // a block the hit path just failed to read locally: not again below
    if (hit.source == locatedBlocks) {
      int i = hit.indexOf(position);
      if (i >= 0 && hit.socketPaths[i] != null && position + length <= hit.ends[i]) {
        int n = readLocal(hit, i, position, buffer, offset, length);
        if (n == length) {
          return n;
        }
        triedLocal = n <= 0 ? i : -1;
        if (n > 0) {
          int more = read(position + n, buffer, offset + n, length - n);
          return more > 0 ? n + more : n;
        }
      }
    }
    long fileLength = getFileLength();
    if (position < 0 || position >= fileLength) {
      return -1;
    }
    int wanted = (int) Math.min(length, fileLength - position);
    int done = 0;
    while (done < wanted) {
      long pos = position + done;
      int remaining = wanted - done;
      BlockTable t = tableFor(pos);
      int i = t.indexOf(pos);
      int n = -1;
      if (i >= 0) {
        int segment = (int) Math.min(remaining, t.ends[i] - pos);
        if (t.socketPaths[i] != null && !(t == hit && i == triedLocal)) {
          n = readLocal(t, i, pos, buffer, offset + done, segment);
        } else if (t.socketPaths[i] == null) {
          countUnreachable(t, i);
        }
        if (n <= 0) {
          n = stockPread(pos, buffer, offset + done, segment);
        }
      } else {
        n = stockPread(pos, buffer, offset + done, remaining);
      }
      if (n <= 0) {
        break;
      }
      done += n;
    }
    return done > 0 ? done : -1;
  }

  @Override
  public int read(long position, ByteBuffer buf) throws IOException {
    if (!buf.hasRemaining()) {
      return 0;
    }
    checkReadable();
    BlockTable hit = table;
    int length = buf.remaining();
    int triedLocal = -1;
    if (hit.source == locatedBlocks) { // the hit path, as in read(long, byte[], int, int)
      int i = hit.indexOf(position);
      if (i >= 0 && hit.socketPaths[i] != null && position + length <= hit.ends[i]) {
        int n = readLocal(hit, i, position, buf, length);
        if (n == length) {
          return n;
        }
        triedLocal = n <= 0 ? i : -1;
        if (n > 0) {
          int more = read(position + n, buf);
          return more > 0 ? n + more : n;
        }
      }
    }
    long fileLength = getFileLength();
    if (position < 0 || position >= fileLength) {
      return -1;
    }
    int wanted = (int) Math.min(buf.remaining(), fileLength - position);
    int limit = buf.limit();
    int done = 0;
    try {
      while (done < wanted) {
        long pos = position + done;
        int remaining = wanted - done;
        BlockTable t = tableFor(pos);
        int i = t.indexOf(pos);
        int segment = i >= 0 ? (int) Math.min(remaining, t.ends[i] - pos) : remaining;
        buf.limit(buf.position() + segment);
        int n = -1;
        if (i >= 0 && t.socketPaths[i] != null && !(t == hit && i == triedLocal)) {
          n = readLocal(t, i, pos, buf, segment);
        } else if (i >= 0 && t.socketPaths[i] == null) {
          countUnreachable(t, i);
        }
        if (n <= 0) {
          n = stockPread(pos, buf);
        }
        if (n <= 0) {
          break;
        }
        done += n;
      }
    } finally {
      buf.limit(limit);
    }
    return done > 0 ? done : -1;
  }

  // readFully(long, ByteBuffer), readFully(long, byte[], int, int) and the default readVectored
  // all end in the two positional reads above.

  // ------------------------------------------------------------------ stateful reads

  @Override
  public synchronized int read(byte[] buf, int off, int len) throws IOException {
    validatePositionedReadArgs(pos, buf, off, len);
    if (len == 0) {
      return 0;
    }
    checkReadable();
    if (pos < getFileLength()) {
      BlockTable t = tableFor(pos);
      int i = t.indexOf(pos);
      if (i >= 0 && t.socketPaths[i] != null) {
        int n = readLocal(t, i, pos, buf, off, (int) Math.min(len, t.ends[i] - pos));
        if (n > 0) {
          advance(n);
          return n;
        }
      } else if (i >= 0) {
        countUnreachable(t, i);
      }
    }
    stockReads.increment();
    return super.read(buf, off, len);
  }

  @Override
  public synchronized int read(ByteBuffer buf) throws IOException {
    if (!buf.hasRemaining()) {
      return super.read(buf); // stock's answer: 0, or -1 at the end of the file
    }
    checkReadable();
    if (pos < getFileLength()) {
      BlockTable t = tableFor(pos);
      int i = t.indexOf(pos);
      if (i >= 0 && t.socketPaths[i] != null) {
        int segment = (int) Math.min(buf.remaining(), t.ends[i] - pos);
        int limit = buf.limit();
        buf.limit(buf.position() + segment);
        int n;
        try {
          n = readLocal(t, i, pos, buf, segment);
        } finally {
          buf.limit(limit);
        }
        if (n > 0) {
          advance(n);
          return n;
        }
      } else if (i >= 0) {
        countUnreachable(t, i);
      }
    }
    stockReads.increment();
    return super.read(buf);
  }

  /**
   * Moves the stateful position past a short-circuit read. A stock block reader positioned
   * elsewhere must not serve the next stock read, so it is closed (which also frees its socket).
   */
  @GuardedBy("this")
  private void advance(int n) {
    if (blockEnd != -1) {
      closeCurrentBlockReaders();
    }
    pos += n;
  }

  // ------------------------------------------------------------------ zero-copy reads

  /** Why a zero-copy read at a local block copied instead; indexes {@link #LOGGED}. */
  private enum NoZeroCopy {
    CHECKSUMS("checksums are verified and the DataNode has not cached the block (no anchor)"),
    NOT_MAPPED("the block file could not be mapped (mapping budget full, unavailable or failed)"),
    FAILED("the replica could not be leased or its block file was truncated"),
    DISABLED("dfs.client.mmap.enabled is false");

    final String why;

    NoZeroCopy(String why) {
      this.why = why;
    }
  }

  /** A zero-copy buffer's hold on its replica: the lease and whether it took an anchor. */
  private static final class Loan {
    final ReplicaLease lease;
    final boolean anchored;

    Loan(ReplicaLease lease, boolean anchored) {
      this.lease = lease;
      this.anchored = anchored;
    }

    void release() {
      try {
        if (anchored) {
          lease.releaseAnchor();
        }
      } finally {
        lease.close();
      }
    }
  }

  @Override
  public synchronized ByteBuffer read(
      ByteBufferPool bufferPool, int maxLength, EnumSet<ReadOption> opts)
      throws IOException, UnsupportedOperationException {
    if (maxLength <= 0) {
      return super.read(bufferPool, maxLength, opts); // stock's empty buffer, or its exception
    }
    checkReadable();
    if (pos >= getFileLength()) {
      return null;
    }
    ByteBuffer mapped = readZeroCopy(maxLength, opts);
    if (mapped != null) {
      return mapped;
    }
    // Stock's fallback, reading through this stream's own (short-circuit) read(ByteBuffer).
    ByteBuffer copy = ByteBufferUtil.fallbackRead(this, bufferPool, maxLength);
    if (copy != null) {
      copiedBuffers.put(copy, bufferPool);
    }
    return copy;
  }

  /**
   * The zero-copy read at {@link #pos}, or null when it cannot be one (the caller copies). Takes a
   * lease of its own (not the thread's spare: it outlives the call) that the buffer keeps.
   */
  @GuardedBy("this")
  private ByteBuffer readZeroCopy(int maxLength, EnumSet<ReadOption> opts) throws IOException {
    BlockTable t = tableFor(pos);
    int i = t.indexOf(pos);
    if (i < 0 || t.socketPaths[i] == null) {
      if (i >= 0) {
        countUnreachable(t, i);
      }
      return null;
    }
    if (!dfsClient.getConf().getShortCircuitConf().isShortCircuitMmapEnabled()) {
      return noZeroCopy(NoZeroCopy.DISABLED);
    }
    long blockOffset = pos - t.starts[i];
    ReplicaLease lease = lease(t, i, pos, false);
    if (lease == null) {
      return noZeroCopy(NoZeroCopy.FAILED);
    }
    boolean anchored = false;
    ByteBuffer view = null;
    try {
      boolean skip = !verifyChecksum || opts.contains(ReadOption.SKIP_CHECKSUMS);
      if (!skip) {
        anchored = lease.tryAnchor();
        if (!anchored) {
          return noZeroCopy(NoZeroCopy.CHECKSUMS);
        }
      }
      long length = Math.min(maxLength, Math.min(t.ends[i], t.starts[i] + lease.length()) - pos);
      if (length <= 0) {
        return noZeroCopy(NoZeroCopy.FAILED); // the replica is shorter than the NameNode says
      }
      view = lease.mapped(blockOffset, (int) length, mappingBudget);
      if (view == null) {
        return noZeroCopy(NoZeroCopy.NOT_MAPPED);
      }
      zeroCopyBuffers.put(view, new Loan(lease, anchored));
      advance(view.remaining());
      zeroCopyReads.increment();
      readStatistics.addZeroCopyBytes(view.remaining());
      return view;
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      failed(t, i, e); // a truncated block file: the block goes stock for a while
      return noZeroCopy(NoZeroCopy.FAILED);
    } finally {
      if (view == null) {
        new Loan(lease, anchored).release();
      }
    }
  }

  private ByteBuffer noZeroCopy(NoZeroCopy why) {
    zeroCopyFallbacks.increment();
    if (!LOGGED[why.ordinal()].getAndSet(true)) {
      LOG.info(
          "A zero-copy read of {} copies instead: {} (logged once per process; counted in the"
              + " stream's zero-copy fallbacks)",
          src,
          why.why);
    }
    return null;
  }

  @Override
  public synchronized void releaseBuffer(ByteBuffer buffer) {
    Loan loan = zeroCopyBuffers.remove(buffer);
    if (loan != null) {
      loan.release();
      return;
    }
    ByteBufferPool pool = copiedBuffers.remove(buffer);
    if (pool != null) {
      pool.putBuffer(buffer);
      return;
    }
    super.releaseBuffer(buffer); // stock's empty buffer, or its IllegalArgumentException
  }

  /**
   * Opens ahead, on the engine's prefetch threads, the replicas of up to {@code maxBlocks} of the
   * local finalized blocks the stream holds locations for (see {@link OpenPrefetch}); returns at
   * once. Called by {@link ScrFileSystem} right after it opened the stream.
   */
  void prefetch(int maxBlocks) {
    if (maxBlocks > 0 && !closed.get()) {
      prefetch = OpenPrefetch.start(scr, src, rebuild(null), maxBlocks);
    }
  }

  @Override
  public synchronized void close() throws IOException {
    OpenPrefetch p = prefetch;
    if (p != null) {
      p.cancel(); // the blocks whose turn has not come are skipped
    }
    if (!zeroCopyBuffers.isEmpty()) {
      LOG.warn(
          "closing {} with {} zero-copy buffers never released; releasing their replicas now"
              + " (a buffer read after its replica closes reads zeros): release every buffer"
              + " read(ByteBufferPool, int, EnumSet) returns with releaseBuffer",
          src,
          zeroCopyBuffers.size());
      for (Loan loan : zeroCopyBuffers.values()) {
        loan.release();
      }
      zeroCopyBuffers.clear();
    }
    copiedBuffers.clear(); // as stock: a copy the caller kept is simply not returned to its pool
    super.close();
  }

  // ------------------------------------------------------------------ the two ways

  private int readLocal(BlockTable t, int i, long pos, byte[] buf, int off, int len)
      throws IOException {
    long blockOffset = pos - t.starts[i];
    int done = 0;
    for (int attempt = 0; ; attempt++) {
      ReplicaLease lease = lease(t, i, pos + done);
      if (lease == null) {
        break;
      }
      try {
        while (done < len) {
          int n = lease.read(blockOffset + done, buf, off + done, len - done, verifyChecksum);
          if (n <= 0) {
            break; // the replica is shorter than the NameNode says: the stock path decides
          }
          done += n;
        }
        break;
      } catch (ChecksumException e) {
        corrupt(t, i, lease.socketPath(), e); // the bytes before the bad chunk were verified
        break;
      } catch (IOException e) {
        if (!leaseAgainAfter(t, i, e, attempt)) {
          break;
        }
      } finally {
        scr.closeToThreadSpare(lease);
      }
    }
    return counted(done);
  }

  private int readLocal(BlockTable t, int i, long pos, ByteBuffer buf, int len) throws IOException {
    long blockOffset = pos - t.starts[i];
    int done = 0;
    for (int attempt = 0; ; attempt++) {
      ReplicaLease lease = lease(t, i, pos + done);
      if (lease == null) {
        break;
      }
      try {
        while (done < len) {
          int n = lease.read(blockOffset + done, buf, verifyChecksum);
          if (n <= 0) {
            break;
          }
          done += n;
        }
        break;
      } catch (ChecksumException e) {
        corrupt(t, i, lease.socketPath(), e); // the bytes before the bad chunk were verified
        break;
      } catch (IOException e) {
        if (!leaseAgainAfter(t, i, e, attempt)) {
          break;
        }
      } finally {
        scr.closeToThreadSpare(lease);
      }
    }
    return counted(done);
  }

  /**
   * What an I/O failure of a short-circuit read means (see the class javadoc): rethrows the reading
   * thread's own interrupt; returns true (lease again) the first time a replica channel was closed
   * under the read by someone else; otherwise demotes the block and returns false (stock path).
   */
  private boolean leaseAgainAfter(BlockTable t, int i, IOException e, int attempt)
      throws IOException {
    if (Interrupts.isOwnInterrupt(e)) {
      throw e;
    }
    if (e instanceof ClosedChannelException && attempt == 0) {
      reopens.increment();
      LOG.debug(
          "A replica of {} in {} was closed under a read; leasing it again", t.blocks[i], src);
      return true;
    }
    failed(t, i, e);
    return false;
  }

  private ReplicaLease lease(BlockTable t, int i, long pos) throws IOException {
    return lease(t, i, pos, true);
  }

  /** Leases the replica of {@code t.blocks[i]}; {@code spare}: reuse the thread's spare lease. */
  private ReplicaLease lease(BlockTable t, int i, long pos, boolean spare) throws IOException {
    LocatedBlock lb = t.blocks[i];
    OpenPrefetch p = prefetch;
    if (p != null) {
      p.readerAt(lb);
    }
    ReplicaLease lease;
    try {
      lease =
          spare
              ? scr.leaseWithThreadSpare(lb.getBlock(), lb.getBlockToken(), t.socketPaths[i], src)
              : scr.lease(lb.getBlock(), lb.getBlockToken(), t.socketPaths[i], src);
    } catch (InvalidToken e) {
      // Refetch the block's locations and token; this read goes stock, the next uses the new one.
      LOG.debug("Block token expired for {} of {}; refetching locations", lb.getBlock(), src);
      fetchBlockAt(pos);
      rebuild(null);
      fallbacks.increment();
      return null;
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      return noLease(t, i, e);
    }
    return lease != null ? lease : noLease(t, i, null);
  }

  /**
   * The engine gave no lease (the reason is counted there). A socket that is backing off, or a
   * DataNode the engine remembers not holding the block ({@code AbsentReplicas}), costs nothing to
   * ask again, so nothing is remembered here and every read is counted; otherwise the block is
   * demoted for {@value #DEMOTION_MILLIS} ms, so a DataNode that refuses for another reason is not
   * asked on every read.
   */
  private ReplicaLease noLease(BlockTable t, int i, IOException cause) {
    String path = t.socketPaths[i];
    if (scr.isBackingOff(path) || scr.absentReplicas().remembers(t.blocks[i].getBlock(), path)) {
      fallbacks.increment();
    } else {
      failed(t, i, cause);
    }
    return null;
  }

  /** Counts a read of a block no local DataNode can serve, with the reason the table holds. */
  private void countUnreachable(BlockTable t, int i) {
    if (t.unreachable[i] != null) {
      scr.recordFallback(t.unreachable[i]);
    }
  }

  private int counted(int done) {
    if (done > 0) {
      shortCircuitReads.increment();
      readStatistics.addShortCircuitBytes(done);
      countLocalFileSystemRead(done);
      return done;
    }
    return -1;
  }

  private int stockPread(long pos, byte[] buf, int off, int len) throws IOException {
    stockReads.increment();
    return super.read(pos, buf, off, len);
  }

  private int stockPread(long pos, ByteBuffer buf) throws IOException {
    stockReads.increment();
    return super.read(pos, buf);
  }

  /**
   * A checksum mismatch in the replica the DataNode at {@code socketPath} served: reports exactly
   * that (DataNode, block) pair to the NameNode as stock does, keeps the stock fallback off that
   * DataNode when the block has other replicas (as stock does after a checksum error), and sends
   * the block the stock way until its locations are refreshed. The DataNode is the one named by the
   * lease, not the one the table chose: with several DataNodes on one host they are the same only
   * because the replica cache keys replicas by DataNode, and a wrong guess would report a good
   * replica.
   */
  private void corrupt(BlockTable t, int i, String socketPath, ChecksumException cause) {
    checksumFallbacks.increment();
    LocatedBlock lb = t.blocks[i];
    DatanodeInfo[] locations = lb.getLocations();
    DatanodeInfo bad = null;
    for (DatanodeInfo dn : locations) {
      if (socketPath != null && socketPath.equals(scr.socketPathOf(dn))) {
        bad = dn;
        break;
      }
    }
    if (bad == null) {
      LOG.warn(
          "Checksum error in the replica of {} served through {}, which is none of its locations"
              + " {}: not reported to the NameNode; reading it the stock way",
          lb.getBlock(),
          socketPath,
          java.util.Arrays.toString(locations),
          cause);
    } else {
      LOG.warn(
          "Checksum error in the replica of {} on {}; reporting it to the NameNode and reading"
              + " another replica: {}",
          lb.getBlock(),
          bad,
          cause.getMessage());
      reportCorruptReplica(lb.getBlock(), bad, locations.length);
      if (locations.length > 1) {
        addToLocalDeadNodes(bad);
      }
    }
    demote(t, i, cause, Long.MAX_VALUE);
  }

  /** Demotes {@code t.blocks[i]} for {@value #DEMOTION_MILLIS} ms and rebuilds the table. */
  private void failed(BlockTable t, int i, IOException cause) {
    demote(t, i, cause, ticker.read() + DEMOTION_NANOS);
  }

  private void demote(BlockTable t, int i, IOException cause, long until) {
    fallbacks.increment();
    if (cause != null) {
      LOG.debug(
          "Short-circuit read of {} in {} failed; reading it the stock way",
          t.blocks[i],
          src,
          cause);
    }
    synchronized (tableLock) {
      Long earlier = demotedUntil.get(t.blocks[i]);
      if (earlier == null || earlier != Long.MAX_VALUE) {
        demotedUntil.put(t.blocks[i], until);
      }
    }
    rebuild(null);
  }

  // ------------------------------------------------------------------ the block table

  private void checkReadable() throws IOException {
    checkClientOpen();
    if (closed.get()) {
      throw new IOException("Stream closed");
    }
  }

  /**
   * The current table, rebuilt first if the stock stream replaced its block list, lacks pos, or a
   * demotion in it has expired.
   */
  private BlockTable tableFor(long pos) throws IOException {
    BlockTable t = table;
    if (t.source == locatedBlocks
        && t.indexOf(pos) >= 0
        && (t.retryAtNanos == Long.MAX_VALUE || !t.retryDue(ticker.read()))) {
      return t;
    }
    if (t.indexOf(pos) < 0 && pos < getFileLength()) {
      getBlockAt(pos); // fetches the range from the NameNode into the stock block list
    }
    return rebuild(t);
  }

  /**
   * Rebuilds the table, unless another thread already replaced {@code seen} with one built from the
   * current block list; {@code seen == null} forces the rebuild.
   */
  private BlockTable rebuild(BlockTable seen) {
    synchronized (tableLock) {
      BlockTable current = table;
      long now = ticker.read();
      if (seen != null
          && current != seen
          && current.source == locatedBlocks
          && !current.retryDue(now)) {
        return current;
      }
      BlockTable fresh;
      synchronized (infoLock) {
        if (!demotedUntil.isEmpty()) {
          // Instances no longer in the block list were refreshed, and expired demotions are over:
          // forget both.
          Map<LocatedBlock, Boolean> listed = new IdentityHashMap<>();
          for (LocatedBlock lb : locatedBlocks.getLocatedBlocks()) {
            listed.put(lb, Boolean.TRUE);
          }
          demotedUntil
              .entrySet()
              .removeIf(e -> !listed.containsKey(e.getKey()) || expired(e.getValue(), now));
        }
        fresh = BlockTable.build(locatedBlocks, scr, demotedUntil, now);
      }
      table = fresh;
      return fresh;
    }
  }

  // ------------------------------------------------------------------ diagnostics

  /** Reads (or read segments) served by short-circuit. */
  long shortCircuitReads() {
    return shortCircuitReads.sum();
  }

  /** Reads (or read segments) handed to the stock stream. */
  long stockReads() {
    return stockReads.sum();
  }

  /** Short-circuit attempts that failed or were refused and went stock. */
  long fallbacks() {
    return fallbacks.sum();
  }

  /** Of {@link #fallbacks()}, those caused by a checksum mismatch. */
  long checksumFallbacks() {
    return checksumFallbacks.sum();
  }

  private static boolean expired(long until, long now) {
    return until != Long.MAX_VALUE && now - until >= 0;
  }

  /** Zero-copy reads served from a mapping of the block file. */
  long zeroCopyReads() {
    return zeroCopyReads.sum();
  }

  /** Zero-copy reads at a local block that copied instead (see the class javadoc). */
  long zeroCopyFallbacks() {
    return zeroCopyFallbacks.sum();
  }

  /** Zero-copy buffers lent out and not released yet. */
  synchronized int outstandingZeroCopyBuffers() {
    return zeroCopyBuffers.size();
  }

  /** Reads that found their replica's channel closed under them and leased it again. */
  long reopens() {
    return reopens.sum();
  }

  /**
   * The socket path of the DataNode the current table short-circuits the block at {@code pos}
   * through, or null when that block goes the stock way (for tests and diagnostics).
   */
  String socketPathAt(long pos) throws IOException {
    BlockTable t = tableFor(pos);
    int i = t.indexOf(pos);
    return i >= 0 ? t.socketPaths[i] : null;
  }

  /** Blocks the current table short-circuits. */
  int localBlockCount() {
    return table.localBlockCount();
  }
}
