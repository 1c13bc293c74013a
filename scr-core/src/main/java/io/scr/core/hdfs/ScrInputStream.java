package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.read.MappingBudget;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.internal.replica.LocalRead;
import io.scr.core.internal.replica.ReplicaSource;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.EnumSet;
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
 * finalized blocks go straight to the replica, leased from the engine's {@link ReplicaSource} (one
 * lease per read, no BlockReader), and whose every other read — remote replicas, the block being
 * written, a failed or refused short-circuit read — is the stock stream's own code.
 *
 * <p><b>Which way a read goes.</b> Every read, {@code byte[]} or {@code ByteBuffer}, positional or
 * stateful, is one range loop over a {@code ByteBuffer} (a {@code byte[]} is wrapped once, at the
 * top, in the thread's reusable wrapper). The loop looks each offset up in a {@link BlockTable}
 * snapshot (binary search over arrays; no allocation), and one method, {@link #readBlock}, decides
 * per block: a block with a local socket path is read through a lease ({@link #readLocal}); the
 * rest, block by block, goes to the stock read. A read spanning blocks may mix both; the bytes
 * returned are the same either way.
 *
 * <p><b>Refresh.</b> The table and the demotions are {@link StreamBlocks}'.
 *
 * <p><b>Files being written.</b> The block being written is read short-circuit up to the stream's
 * visible length (the engine's {@link LocalRead}). That length is measured on open from the local
 * DataNode's memory where it has the scr shim ({@link LocalVisibleLength#onOpen}, in place of
 * stock's TCP RPC), and a stateful read at the end asks the local DataNode again when the replica's
 * block file has grown ({@link GrowingTail}), so a reader can read on without reopening.
 *
 * <p><b>Failures are transient unless they prove otherwise.</b> A failed or refused short-circuit
 * read sends the rest of that read to the stock path; what the failure means for the block, with a
 * bound on every decision, is {@link ReadFailures}'. A read of a block no local DataNode holds
 * counts {@code NOT_LOCAL} (or why else it has no socket) in the engine's fallback counters, once
 * per read.
 *
 * <p><b>Statistics.</b> Short-circuit bytes are added to the stock {@code ReadStatistics} with
 * {@code addShortCircuitBytes} (so {@code HdfsDataInputStream.getReadStatistics()} shows them) and
 * to the file system's {@code FileSystem.Statistics} at distance 0, as a stock local reader would.
 *
 * <p><b>Concurrency.</b> Positional reads may run concurrently (HBase does): they share only the
 * volatile, immutable table and thread-safe counters, and take a lease each, reusing the reading
 * thread's spare lease object and buffers (its {@link ReadContext}), so the hit path allocates
 * nothing whichever threads read whichever streams. Stateful and zero-copy reads hold the stream
 * monitor, as stock does. Lock order: the stream monitor, then {@link StreamBlocks}' table lock or
 * {@link ZeroCopyReads}' monitor, then the stock {@code infoLock}. The hit path reads the stock
 * {@code locatedBlocks} field without {@code infoLock} to see that the table is current: a benign
 * race (a stale view only delays the rebuild to the next read).
 *
 * <p><b>Zero-copy reads</b> (stock's semantics) lend a slice of the block file's mapping that keeps
 * a lease until {@link #releaseBuffer} ({@link ZeroCopyReads}), or copy as stock does.
 *
 * <p><b>Prefetch on open.</b> {@link ScrFileSystem} calls {@link #prefetch} right after it made the
 * stream ({@link OpenPrefetch}); {@link #close()} cancels the opens that have not run yet.
 *
 * <p><b>Resources.</b> Holds no fds or sockets between reads, apart from the leases of zero-copy
 * buffers not yet released: each other lease is closed before the read returns, and the cached
 * replicas belong to the {@link Engine}. {@link #unbuffer()} therefore releases only the stock
 * block reader and its socket, keeping the engine's cached fds. {@link #close()} gives back the
 * leases of buffers the caller never released (logging them, as stock does): a released replica's
 * mapping then reads as zeros rather than faulting.
 */
final class ScrInputStream extends ScrDfsInputStreamBase
    implements StreamBlocks.Stock, ReadFailures.Reporter {
  private static final Logger LOG = LoggerFactory.getLogger(ScrInputStream.class);

  /** How long a block whose short-circuit read failed goes the stock way before it is retried. */
  static final long DEMOTION_MILLIS = 1000;

  private final Engine scr;

  /** Where zero-copy reads lease their replica. */
  private final ReplicaSource source;

  /** Every other short-circuit read of this stream. */
  private final LocalRead localRead;

  private final StreamBlocks blocks;

  /**
   * The replica opens {@link #prefetch} queued, cancelled by {@link #close()}; null if none, or
   * once a read found them ended.
   */
  private volatile OpenPrefetch prefetch;

  /** The block being written: its reads and its length at the stream's end. */
  private final GrowingTail tail;

  private final ReadFailures failures;

  /**
   * The socket of the local DataNode that served the last stateful read, when it was served
   * short-circuit; null when stock's read was the last (its {@code currentNode} answers then).
   */
  @GuardedBy("this")
  private String localCurrentSocket;

  private final ZeroCopyReads zeroCopy;
  private final DataNodeSteering steering;
  private final StreamCounters counters;

  /**
   * A stream of {@code src} whose short-circuit reads go through {@code scr}, with the time source
   * demotions are measured with, the budget of block-file mappings zero-copy reads use, the RPC a
   * stock DataNode tells the visible length of a block being written by, and the visible length of
   * the block being written that the local DataNode reported just now ({@link
   * LocalVisibleLength#onOpen}; -1: none, stock asks a DataNode over TCP).
   */
  ScrInputStream(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      Engine scr,
      Ticker ticker,
      MappingBudget mappingBudget,
      VisibleLengthRpc visibleLengths,
      long lastBlockVisibleLength)
      throws IOException {
    super(client, src, verifyChecksum, locatedBlocks, lastBlockVisibleLength);
    this.scr = scr;
    this.tail = new GrowingTail(scr, visibleLengths, src);
    this.source = scr.replicaSource();
    this.localRead = scr.localRead();
    this.zeroCopy = new ZeroCopyReads(src, mappingBudget);
    this.blocks = new StreamBlocks(this, scr, ticker);
    this.failures = new ReadFailures(src, scr, blocks, ticker, this);
    this.steering = new DataNodeSteering(scr, this::isDeadForStock);
    this.counters = new StreamCounters(failures, tail, zeroCopy, steering);
  }

  // ------------------------------------------------------------------ positional reads

  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    validatePositionedReadArgs(position, buffer, offset, length);
    if (length == 0) {
      return 0;
    }
    if (offset < 0) {
      return super.read(position, buffer, offset, length); // stock's answer, whatever it is
    }
    checkReadable();
    ReadContext context = source.readContext();
    return readRange(context, position, context.wrap(buffer, offset, length));
  }

  @Override
  public int read(long position, ByteBuffer buf) throws IOException {
    if (!buf.hasRemaining()) {
      return 0;
    }
    checkReadable();
    return readRange(source.readContext(), position, buf);
  }

  // readFully(long, ByteBuffer), readFully(long, byte[], int, int) and the default readVectored
  // all end in the two positional reads above.

  /**
   * The positional read of {@code buf.remaining()} bytes at {@code position}: block by block, each
   * through {@link #readBlock}. Returns the bytes read (the whole range up to the end of the file),
   * or -1 at or past it.
   */
  private int readRange(ReadContext context, long position, ByteBuffer buf) throws IOException {
    // The hit path: the current table has the whole range in one short-circuit block, which ends
    // within the finalized length, so the file length (behind the stock infoLock) is not needed.
    BlockTable hit = blocks.table;
    int length = buf.remaining();
    int triedLocal = -1; // a block the hit path just failed to read locally: not again below
    if (hit.source == locatedBlocks) {
      int i = hit.indexOf(position);
      if (i >= 0 && hit.socketPaths[i] != null && position + length <= hit.ends[i]) {
        int n = readLocal(context, hit, i, position, buf);
        if (n == length) {
          return n;
        }
        triedLocal = n <= 0 ? i : -1;
        if (n > 0) {
          int more = readRange(context, position + n, buf);
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
        BlockTable t = blocks.tableFor(pos);
        int i = t.indexOf(pos);
        int segment = i >= 0 ? (int) Math.min(wanted - done, t.ends[i] - pos) : wanted - done;
        buf.limit(buf.position() + segment);
        int n = readBlock(context, t, i, pos, buf, t == hit && i == triedLocal);
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

  /**
   * Reads up to {@code buf.remaining()} bytes at {@code pos} of block {@code i} of {@code t} (or,
   * when {@code i < 0}, a range the table does not hold) into {@code buf}: the one place a read
   * chooses between the replica and the stock stream. Short-circuit when the block has a local
   * socket (unless {@code triedLocal}: this read just failed there), the stock pread for what that
   * does not serve.
   */
  private int readBlock(
      ReadContext context, BlockTable t, int i, long pos, ByteBuffer buf, boolean triedLocal)
      throws IOException {
    int n = -1;
    if (i >= 0 && t.socketPaths[i] != null && !triedLocal) {
      n = readLocal(context, t, i, pos, buf);
    } else if (i >= 0 && t.socketPaths[i] == null) {
      countUnreachable(t, i);
    }
    if (n <= 0) {
      counters.stockReads.increment();
      n = super.read(pos, buf);
    }
    return n;
  }

  // ------------------------------------------------------------------ stateful reads

  @Override
  public synchronized int read(byte[] buf, int off, int len) throws IOException {
    validatePositionedReadArgs(pos, buf, off, len);
    if (len == 0) {
      return 0;
    }
    if (off < 0) {
      return stockRead(buf, off, len); // stock's answer (IndexOutOfBoundsException, or -1 at EOF)
    }
    checkReadable();
    ReadContext context = source.readContext();
    int n = readLocalAtPosition(context, context.wrap(buf, off, len));
    if (n > 0) {
      return n;
    }
    counters.stockReads.increment();
    return stockRead(buf, off, len);
  }

  /**
   * Stock's stateful read: one that read bytes leaves stock's own current block and DataNode (at
   * the end of the file stock changes neither).
   */
  @GuardedBy("this")
  private int stockRead(byte[] buf, int off, int len) throws IOException {
    int n = super.read(buf, off, len);
    if (n > 0) {
      localCurrentSocket = null;
    }
    return n;
  }

  @Override
  public synchronized int read(ByteBuffer buf) throws IOException {
    if (!buf.hasRemaining()) {
      return super.read(buf); // stock's answer: 0, or -1 at the end of the file
    }
    checkReadable();
    int n = readLocalAtPosition(source.readContext(), buf);
    if (n > 0) {
      return n;
    }
    counters.stockReads.increment();
    n = super.read(buf);
    if (n > 0) {
      localCurrentSocket = null; // stock's current block and DataNode now, as in stockRead
    }
    return n;
  }

  /**
   * The stateful read's short-circuit part: up to the end of the block at {@link #pos}, advancing
   * the position past what it read; -1 when that block goes the stock way.
   */
  @GuardedBy("this")
  private int readLocalAtPosition(ReadContext context, ByteBuffer buf) throws IOException {
    if (pos >= getFileLength() && !learnGrownLength()) {
      return -1;
    }
    BlockTable t = blocks.tableFor(pos);
    int i = t.indexOf(pos);
    if (i < 0) {
      return -1;
    }
    if (t.socketPaths[i] == null) {
      countUnreachable(t, i);
      return -1;
    }
    int segment = (int) Math.min(buf.remaining(), t.ends[i] - pos);
    int limit = buf.limit();
    buf.limit(buf.position() + segment);
    int n;
    try {
      n = readLocal(context, t, i, pos, buf);
    } finally {
      buf.limit(limit);
    }
    if (n > 0) {
      advance(n);
      becomeCurrent(t, i);
    }
    return n;
  }

  /**
   * Makes block {@code i} of {@code t}, just read short-circuit by a stateful or zero-copy read,
   * the stream's current block and its local DataNode the current DataNode, as stock's {@code
   * blockSeekTo} leaves them after a read ({@link #getCurrentBlock()}, {@link
   * #getCurrentDatanode()}); the next stock stateful read sets stock's own again.
   */
  @GuardedBy("this")
  private void becomeCurrent(BlockTable t, int i) {
    currentLocatedBlock = t.blocks[i];
    localCurrentSocket = t.socketPaths[i];
  }

  /**
   * The DataNode of the last stateful read when it was short-circuit: the location of the current
   * block whose local socket served it; stock's answer otherwise (its {@code currentNode}).
   */
  @Override
  public synchronized DatanodeInfo getCurrentDatanode() {
    String socket = localCurrentSocket;
    LocatedBlock current = currentLocatedBlock;
    if (socket != null && current != null) {
      for (DatanodeInfo dn : current.getLocations()) {
        if (socket.equals(scr.socketPathOf(dn))) {
          return dn;
        }
      }
    }
    return super.getCurrentDatanode();
  }

  /**
   * At the end of what the stream measured, while its last block is still being written on a local
   * DataNode: asks that DataNode for the block's visible length now ({@link GrowingTail}), and when
   * it has grown, makes the stream's file length (stock's too) reach it; true then. Positional
   * reads past the end still return -1, as stock's do: only a stateful read at the end asks.
   */
  @GuardedBy("this")
  private boolean learnGrownLength() throws IOException {
    LocatedBlock last;
    synchronized (infoLock) {
      last = GrowingTail.beingWrittenEndingAt(locatedBlocks, pos);
    }
    long visible = last != null ? tail.grownLength(last) : -1;
    if (visible < 0 || !extendLastBlock(last.getBlock(), visible)) {
      return false;
    }
    tail.countGrown();
    blocks.rebuild(null);
    return pos < getFileLength();
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
      zeroCopy.copied(copy, bufferPool);
    }
    return copy;
  }

  /**
   * The zero-copy read at {@link #pos}, or null when it cannot be one (the caller copies). Takes a
   * lease of its own (not the thread's spare: it outlives the call) that the buffer keeps.
   */
  @GuardedBy("this")
  private ByteBuffer readZeroCopy(int maxLength, EnumSet<ReadOption> opts) throws IOException {
    BlockTable t = blocks.tableFor(pos);
    int i = t.indexOf(pos);
    if (i < 0 || t.socketPaths[i] == null) {
      if (i >= 0) {
        countUnreachable(t, i);
      }
      return null;
    }
    if (t.beingWritten[i]) {
      return null; // a growing block file is never mapped: copied through read(ByteBuffer)
    }
    if (!dfsClient.getConf().getShortCircuitConf().isShortCircuitMmapEnabled()) {
      return zeroCopy.fallback(ZeroCopyReads.NoZeroCopy.DISABLED);
    }
    ReplicaLease lease = zeroCopyLease(t, i, pos);
    if (lease == null) {
      return zeroCopy.fallback(ZeroCopyReads.NoZeroCopy.FAILED);
    }
    boolean skip = !verifyChecksum || opts.contains(ReadOption.SKIP_CHECKSUMS);
    ByteBuffer view;
    try {
      view = zeroCopy.lend(lease, pos - t.starts[i], maxLength, t.ends[i] - pos, skip);
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      failures.failed(t, i, e); // a truncated block file: the block goes stock for a while
      return zeroCopy.fallback(ZeroCopyReads.NoZeroCopy.FAILED);
    }
    if (view != null) {
      advance(view.remaining());
      becomeCurrent(t, i);
      readStatistics.addZeroCopyBytes(view.remaining());
    }
    return view;
  }

  @Override
  public synchronized void releaseBuffer(ByteBuffer buffer) {
    if (!zeroCopy.release(buffer)) {
      super.releaseBuffer(buffer); // stock's empty buffer, or its IllegalArgumentException
    }
  }

  /**
   * Opens ahead, on the engine's prefetch threads, the replicas of up to {@code maxBlocks} of the
   * local finalized blocks the stream holds locations for (see {@link OpenPrefetch}); returns at
   * once. Called by {@link ScrFileSystem} right after it opened the stream.
   */
  void prefetch(int maxBlocks) {
    if (maxBlocks > 0 && !closed.get()) {
      prefetch = OpenPrefetch.start(scr, src, blocks.rebuild(null), maxBlocks);
    }
  }

  @Override
  public synchronized void close() throws IOException {
    OpenPrefetch p = prefetch;
    if (p != null) {
      p.cancel(); // the blocks whose turn has not come are skipped
    }
    zeroCopy.releaseAll();
    super.close();
  }

  // ------------------------------------------------------------------ the two ways

  /**
   * Reads up to {@code buf.remaining()} bytes at {@code pos} of block {@code i} from its replica
   * into {@code buf} through the engine's {@link LocalRead}; returns the bytes read, or -1 when
   * none (the caller reads the rest the stock way). On a failure {@code buf}'s position is left
   * just past the bytes returned.
   *
   * <p>What the read's end means for the block is decided here: a failure or refusal demotes it
   * ({@link ReadFailures}), a corrupt replica is reported, an expired token is refetched; what the
   * block being written cannot serve now (not yet on disk, the tail moving, a replica recovered
   * under the reader) is left to the stock read without a corruption report or a demotion: the next
   * read tries again.
   */
  private int readLocal(ReadContext context, BlockTable t, int i, long pos, ByteBuffer buf)
      throws IOException {
    LocatedBlock lb = t.blocks[i];
    OpenPrefetch p = prefetch;
    if (p != null && !p.readerAt(lb)) {
      prefetch = null; // ended: later reads skip it, and close() has nothing to cancel
    }
    long readEnd = t.beingWritten[i] ? t.ends[i] - t.starts[i] : -1;
    int n =
        localRead.read(
            context,
            lb.getBlock(),
            lb.getBlockToken(),
            t.socketPaths[i],
            src,
            readEnd,
            pos - t.starts[i],
            buf,
            verifyChecksum);
    if (context.wasReopened()) {
      failures.reopened(lb);
    }
    switch (context.stop()) {
      case NONE:
        break;
      case NO_LEASE:
        failures.noLease(t, i, context.stopCause());
        break;
      case BAD_TOKEN:
        tokenExpired(lb, pos + Math.max(n, 0));
        break;
      case CORRUPT:
        failures.corrupt(t, i, context.stopSocket(), (ChecksumException) context.stopCause());
        break;
      case FAILED:
        failures.failed(t, i, context.stopCause());
        break;
      case NOT_READY:
        tail.countFallback();
        LOG.debug("{} of {}: {}", lb.getBlock(), src, context.stopCause().getMessage());
        break;
    }
    return counted(n);
  }

  /**
   * A lease of its own on the replica of {@code t.blocks[i]}, for a zero-copy read of a finalized
   * block (the buffer keeps it); null when the block goes stock this time.
   */
  private ReplicaLease zeroCopyLease(BlockTable t, int i, long pos) throws IOException {
    LocatedBlock lb = t.blocks[i];
    ReplicaLease lease;
    try {
      lease = source.lease(lb.getBlock(), lb.getBlockToken(), t.socketPaths[i], src, null, null);
    } catch (InvalidToken e) {
      tokenExpired(lb, pos);
      return null;
    } catch (IOException e) {
      if (Interrupts.isOwnInterrupt(e)) {
        throw e;
      }
      return failures.noLease(t, i, e);
    }
    return lease != null ? lease : failures.noLease(t, i, null);
  }

  /**
   * The DataNode rejected {@code lb}'s block token: refetches the block's locations and token at
   * {@code pos}; this read goes stock, the next uses the new token.
   */
  private void tokenExpired(LocatedBlock lb, long pos) throws IOException {
    LOG.debug("Block token expired for {} of {}; refetching locations", lb.getBlock(), src);
    fetchBlockAt(pos);
    blocks.rebuild(null);
    failures.tokenExpired();
  }

  /** Counts a read of a block no local DataNode can serve, with the reason the table holds. */
  private void countUnreachable(BlockTable t, int i) {
    if (t.unreachable[i] != null) {
      scr.recordFallback(t.unreachable[i]);
    }
  }

  private int counted(int done) {
    if (done > 0) {
      counters.shortCircuitReads.increment();
      readStatistics.addShortCircuitBytes(done);
      countLocalFileSystemRead(done);
      return done;
    }
    return -1;
  }

  private void checkReadable() throws IOException {
    checkClientOpen();
    if (closed.get()) {
      throw new IOException("Stream closed");
    }
  }

  // ------------------------------------------------------------------ stock's choice of a
  // DataNode (StreamBlocks.Stock and ReadFailures.Reporter are the base class's bridge methods)

  /** {@link DataNodeSteering#nodesToSkip}: off an unhealthy local DataNode when another serves. */
  @Override
  protected Collection<DatanodeInfo> nodesToSkip(
      LocatedBlock block, Collection<DatanodeInfo> ignoredNodes) {
    return steering.nodesToSkip(block, ignoredNodes);
  }

  // ------------------------------------------------------------------ diagnostics

  /** What this stream did: reads each way, fallbacks, zero-copy reads, steered choices. */
  StreamCounters counters() {
    return counters;
  }

  /** The stream's block table and demotions. */
  StreamBlocks blocks() {
    return blocks;
  }
}
