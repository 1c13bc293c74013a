package io.scr.core.hdfs;

import io.scr.core.ReplicaLease;
import io.scr.core.ScrKeys;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.internal.read.TailSnapshot;
import io.scr.core.internal.replica.LocalRead;
import io.scr.core.internal.replica.ReplicaSource;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.ReplicaAccessor;
import org.apache.hadoop.hdfs.ReplicaAccessorBuilder;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Integration point 1: set {@code dfs.client.replica.accessor.builder.classes} to this class and
 * the stock {@code DFSInputStream} asks it first for every block read (its {@code
 * BlockReaderFactory} wraps the accessor in an {@code ExternalBlockReader}). No other change: the
 * stock {@code DistributedFileSystem} stays, and {@code dfs.client.read.shortcircuit} can stay
 * false (then only scr reads locally, without libhadoop).
 *
 * <p><b>Finding the socket.</b> The builder is told the block, not the DataNode the stream chose. A
 * replica the engine has open already is served at once, whichever DataNode it came from (the cache
 * is keyed by block): no socket, no token decoding, no configuration lookup (the engine is
 * remembered for the DFSClient's configuration object). On a miss it asks the configured local
 * sockets ({@code scr.client.socket.paths}, else {@code dfs.domain.socket.path}; a {@code _PORT}
 * template is matched against the socket files in its directory, one per local DataNode), skipping
 * those backing off, the one that last served this block or file first, until one serves the block
 * ({@link Engine#leaseFromLocalDataNode}). With one DataNode per host there is one path and no
 * search. With several, a DataNode without the block answers ERROR: one round trip, counted as a
 * misdirected request, no backoff; the file hint keeps that to about one per file and DataNode.
 *
 * <p><b>Files open for write.</b> Stock asks with {@code allowShortCircuit=false} for every block
 * of a file being written. A local DataNode with the scr shim tells the replica's state in one
 * UNIX-socket round trip: its complete blocks are served as any other, and the block being written
 * when the bytes the read needs are on disk (verified up to the read's end, never past it). A stock
 * DataNode (mode A) cannot tell that without a TCP round trip: such files are read the stock way.
 *
 * <p><b>A local DataNode that is unwell</b> (hung, dead, just back): a block not open already is
 * served by an accessor that reads another replica through a stock stream of scr's own that skips
 * the unwell DataNode ({@link UnwellDataNodeDetour}), so stock never waits for the DataNode it
 * chose, which is the local one first.
 *
 * <p><b>When it returns null</b> (the stock path reads the block): the file is open for write and
 * no local DataNode with the shim serves the read (above), scr is disabled or no local socket is
 * configured, no local socket is usable (missing, backing off), or no local DataNode can serve the
 * block. An invalid block token also yields null: the stock reader then surfaces it and refetches
 * the token.
 *
 * <p><b>Engine lifetime.</b> Stock instantiates a builder per block read, so the engine ({@link
 * Engine}) is held per client context for the life of the JVM, like stock's {@code ClientContext};
 * {@link #releaseAll()} closes it (for tests and containers that reload).
 *
 * <p>Not thread-safe (stock uses each builder once, on one thread); the accessor it builds is used
 * by one block reader.
 */
public final class ScrReplicaAccessorBuilder extends ReplicaAccessorBuilder {
  private static final Logger LOG = LoggerFactory.getLogger(ScrReplicaAccessorBuilder.class);
  private static final ConcurrentHashMap<String, Engine> CLIENTS = new ConcurrentHashMap<>();

  /** Corrupt replicas found through accessors, until they are reported (or found all bad). */
  static final AccessorCorruptionReports REPORTS = new AccessorCorruptionReports();

  /**
   * The token a read passes while the accessor has not decoded the block's: a cache hit needs none,
   * and a miss that the DataNode refuses for it decodes the real one and reads again.
   */
  private static final Token<BlockTokenIdentifier> EMPTY_TOKEN = new Token<>();

  /** Per client context: reads around an unwell local DataNode ({@link UnwellDataNodeDetour}). */
  private static final ConcurrentHashMap<String, UnwellDataNodeDetour> DETOURS =
      new ConcurrentHashMap<>();

  /** The last configuration seen and its engine (null: scr disabled there). */
  private static volatile ConfEngine lastConf;

  private String fileName;
  private long blockId;
  private String blockPoolId;
  private long generationStamp;
  private boolean verifyChecksum = true;
  private boolean allowShortCircuit = true;
  private long visibleLength = -1;
  private Configuration conf;
  private byte[] token;

  @Override
  public ReplicaAccessorBuilder setFileName(String fileName) {
    this.fileName = fileName;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setBlock(long blockId, String blockPoolId) {
    this.blockId = blockId;
    this.blockPoolId = blockPoolId;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setGenerationStamp(long generationStamp) {
    this.generationStamp = generationStamp;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setVerifyChecksum(boolean verifyChecksum) {
    this.verifyChecksum = verifyChecksum;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setClientName(String clientName) {
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setAllowShortCircuitReads(boolean allow) {
    this.allowShortCircuit = allow;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setVisibleLength(long visibleLength) {
    this.visibleLength = visibleLength;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setConfiguration(Configuration conf) {
    this.conf = conf;
    return this;
  }

  @Override
  public ReplicaAccessorBuilder setBlockAccessToken(byte[] token) {
    this.token = token;
    return this;
  }

  @Override
  public ReplicaAccessor build() {
    if (conf == null || blockPoolId == null) {
      return null;
    }
    Engine client = enabledClient(conf);
    if (client == null) {
      return null;
    }
    // numBytes is not used by the DataNode for fd requests; the lease reports the real length.
    ExtendedBlock block = new ExtendedBlock(blockPoolId, blockId, 0, generationStamp);
    boolean corruptFound = REPORTS.any() && REPORTS.has(block);
    Accessor accessor =
        allowShortCircuit ? buildFinalized(client, block) : buildForOpenFile(client, block);
    if (corruptFound) {
      if (accessor == null) {
        REPORTS.handedToStock(block);
      } else {
        accessor.reportCorruptOnGoodRead = true;
      }
    }
    if (accessor == null && allowShortCircuit && !corruptFound) {
      // Not served locally: while a local DataNode is unwell, read around it rather than let
      // stock read from its choice, the unwell DataNode first.
      return detour(client, conf).accessor(fileName, block, verifyChecksum);
    }
    return accessor;
  }

  /** The detour of {@code client}'s context around unwell local DataNodes. */
  private static UnwellDataNodeDetour detour(Engine client, Configuration conf) {
    UnwellDataNodeDetour d = DETOURS.get(client.context());
    return d != null
        ? d
        : DETOURS.computeIfAbsent(client.context(), k -> new UnwellDataNodeDetour(client, conf));
  }

  /** The accessor for a block of a closed file, or null (stock reads it). */
  private Accessor buildFinalized(Engine client, ExtendedBlock block) {
    ReplicaLease lease = client.leaseIfCached(block, fileName);
    Token<BlockTokenIdentifier> decoded = null; // a hit needs no token: decoded on a miss only
    if (lease == null) {
      try {
        decoded = decodeToken(token);
        lease = client.leaseFromLocalDataNode(block, decoded, fileName);
      } catch (IOException e) {
        LOG.debug("short-circuit lease of {} failed; using the stock reader", block, e);
        return null;
      }
      if (lease == null) {
        return null;
      }
    }
    if (visibleLength > lease.length()) {
      lease.close();
      return null; // the DataNode's replica is shorter than what the reader may read: stock's
    }
    return new Accessor(this, client, block, decoded, lease, -1);
  }

  /**
   * A block of a file open for write (stock asks with {@code allowShortCircuit=false} for every
   * block of such a file, and tells neither which block is being written nor its visible length,
   * only where this read ends, which is within stock's visible length). Served only by a local
   * DataNode with the scr shim, which tells the replica's state in one UNIX-socket round trip
   * (REPLICA_STATE): a finalized replica (a complete block) as any other; the block being written
   * when its bytes on disk, with the checksum of their partial last chunk in the answer, reach the
   * read's end, so the whole read can be served (an accessor that read short would fail stock's
   * read). Otherwise null: a stock DataNode's answer would take a TCP round trip, and the stock
   * reader reads the block.
   */
  private Accessor buildForOpenFile(Engine client, ExtendedBlock block) {
    try {
      Token<BlockTokenIdentifier> t = decodeToken(token);
      for (String path : client.localSocketPaths()) {
        if (client.isDataNodeUnwell(path)
            || client.isBackingOff(path)
            || !client.extensions().features(path).replicaState()) {
          continue;
        }
        TailSnapshot state = client.tailReads().replicaState(block, t, path);
        if (state == null) {
          continue; // not held there, or no answer: the next local DataNode
        }
        if (state.generationStamp() != generationStamp) {
          return null; // recovered or appended since the reader learnt the block
        }
        if (state.beingWritten() && state.dataLength() < visibleLength) {
          return null; // acknowledged but not on disk yet: stock's DataNode waits for it
        }
        ReplicaSource source = client.replicaSource();
        ReplicaLease lease =
            source.lease(source.readContext(), block, t, path, fileName, state.beingWritten());
        if (lease == null) {
          return null;
        }
        if (!state.beingWritten() && visibleLength > lease.length()) {
          lease.close();
          return null;
        }
        return new Accessor(
            this, client, block, t, lease, state.beingWritten() ? visibleLength : -1);
      }
    } catch (IOException e) {
      LOG.debug("short-circuit read of {} of an open file declined; stock reads it", block, e);
    }
    return null;
  }

  private static Token<BlockTokenIdentifier> decodeToken(byte[] bytes) throws IOException {
    Token<BlockTokenIdentifier> t = new Token<>();
    if (bytes != null && bytes.length > 0) {
      t.readFields(new DataInputStream(new ByteArrayInputStream(bytes)));
    }
    return t;
  }

  /**
   * The engine for {@code conf}, or null when scr is disabled there. Stock builds an accessor per
   * read with the same {@code Configuration} object (its DFSClient's), so the answer is kept for
   * the last one seen: reading three keys per read would cost more than the read.
   */
  private static Engine enabledClient(Configuration conf) {
    ConfEngine last = lastConf;
    if (last != null && last.conf == conf) {
      return last.client;
    }
    Engine client = ScrKeys.CLIENT_ENABLED.get(conf::get) ? client(conf) : null;
    if (client != null) {
      warnIfZeroCopyLost(conf);
    }
    lastConf = new ConfEngine(conf, client);
    return client;
  }

  /** Whether the zero-copy WARN was logged (once per process). */
  private static final AtomicBoolean ZERO_COPY_WARNED = new AtomicBoolean();

  /**
   * Says once per process, as WARN, what a client with stock short-circuit reads and mappings on
   * loses with the accessor: stock's {@code ExternalBlockReader} maps nothing, so zero-copy reads
   * of the blocks scr serves are copies, and fail without a fallback pool. Returns whether it
   * logged now.
   */
  static boolean warnIfZeroCopyLost(Configuration conf) {
    if (ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.get(conf::get)
        && conf.getBoolean(
            HdfsClientConfigKeys.Mmap.ENABLED_KEY, HdfsClientConfigKeys.Mmap.ENABLED_DEFAULT)
        && ZERO_COPY_WARNED.compareAndSet(false, true)) {
      LOG.warn(
          "Zero-copy reads (read(ByteBufferPool, int, EnumSet)) of blocks the replica accessor"
              + " serves are copies into the caller's ByteBufferPool, not mappings as with stock"
              + " short-circuit reads ({}=true): a caller that passes no pool gets"
              + " UnsupportedOperationException. fs.hdfs.impl={} maps blocks for zero-copy reads;"
              + " 'scr doctor' reports this as zero-copy",
          ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name(),
          ScrFileSystem.class.getName());
      return true;
    }
    return false;
  }

  private static Engine client(Configuration conf) {
    String context = ScrKeys.CLIENT_CONTEXT.get(conf::get);
    if (context == null || context.isEmpty()) {
      context = ScrKeys.DFS_CLIENT_CONTEXT.get(conf::get);
    }
    Engine c = CLIENTS.get(context);
    if (c != null) {
      return c;
    }
    Engine engine = CLIENTS.computeIfAbsent(context, k -> Engine.acquire(conf));
    // The detour's DFSClient is made now, once per context, rather than by the first read that
    // meets an unwell DataNode.
    detour(engine, conf).prepare();
    return engine;
  }

  /** The engine this builder uses for {@code conf}'s context (acquired on first use). */
  static Engine engine(Configuration conf) {
    return client(conf);
  }

  /**
   * Releases every engine the builder holds (closing it unless someone else also holds it). Reads
   * after this acquire a new engine.
   */
  public static void releaseAll() {
    lastConf = null;
    for (String context : DETOURS.keySet()) {
      UnwellDataNodeDetour d = DETOURS.remove(context);
      if (d != null) {
        d.close();
      }
    }
    for (String context : CLIENTS.keySet()) {
      Engine c = CLIENTS.remove(context);
      if (c != null) {
        c.close();
      }
    }
  }

  /** A configuration object and the engine it resolved to. Immutable. */
  private static final class ConfEngine {
    final Configuration conf;
    final Engine client;

    ConfEngine(Configuration conf, Engine client) {
      this.conf = conf;
      this.client = client;
    }
  }

  /**
   * The accessor: the replica of one block on one local DataNode, read by one block reader through
   * the engine's {@link LocalRead}, as {@code ScrInputStream} reads. The lease the builder took
   * stays open until the block reader closes the accessor (as stock's block reader holds its
   * replica), so the replica stays cached and each read's own lease is a cache hit.
   *
   * <p>A checksum mismatch is not passed to the stock stream as a {@link ChecksumException}: stock
   * would report the DataNode <em>it</em> chose, which need not be the one whose replica this is
   * (the builder is not told which DataNode stock chose, and stock asks the accessor for remote
   * DataNodes too), so a good replica would be reported, and each retry would get the same corrupt
   * cached replica until the read failed. Instead the engine drops and avoids that replica ({@link
   * Engine#replicaFailedChecksum}) and the stock stream sees a plain I/O error: it moves to another
   * location, for which the builder serves another replica or none (stock reads it, and reports a
   * corrupt replica it reads itself against the right DataNode). The corrupt replica is reported to
   * the NameNode against the DataNode that served it, with stock's rule ({@link
   * AccessorCorruptionReports}). Any other failure that leaves a read with no bytes is the stock
   * stream's to handle, as a failed block reader's.
   */
  private static final class Accessor extends ReplicaAccessor {
    private final Engine client;
    private final LocalRead reads;
    private final ExtendedBlock block;
    private final ReplicaLease held;
    private final String socketPath;
    private final boolean verifyChecksum;
    private final Configuration conf;
    private final String fileName;
    private final byte[] tokenBytes;

    /** The block's token, decoded on the first read that needs it (a miss); null until then. */
    private Token<BlockTokenIdentifier> token;

    /**
     * Where the read stock is making ends, for a block being written (never a byte past it: it is
     * within stock's visible length); -1 for a finalized replica.
     */
    private final long readEnd;

    /** Set once the replica failed verification: every later read fails with it. */
    private IOException corrupt;

    /**
     * Whether other replicas of the block were found corrupt and await the outcome ({@link
     * AccessorCorruptionReports}): this replica's first good read reports them.
     */
    boolean reportCorruptOnGoodRead;

    Accessor(
        ScrReplicaAccessorBuilder builder,
        Engine client,
        ExtendedBlock block,
        Token<BlockTokenIdentifier> token,
        ReplicaLease held,
        long readEnd) {
      this.client = client;
      this.held = held;
      this.reads = client.localRead();
      this.block = block;
      this.token = token;
      this.tokenBytes = builder.token;
      this.socketPath = held.socketPath();
      this.verifyChecksum = builder.verifyChecksum;
      this.conf = builder.conf;
      this.fileName = builder.fileName;
      this.readEnd = readEnd;
    }

    @Override
    public int read(long pos, byte[] buf, int off, int len) throws IOException {
      return read(pos, ByteBuffer.wrap(buf, off, len));
    }

    @Override
    public int read(long pos, ByteBuffer buf) throws IOException {
      if (corrupt != null) {
        throw corrupt;
      }
      if (!buf.hasRemaining()) {
        return 0;
      }
      ReadContext context = client.replicaSource().readContext();
      int n = readOnce(context, pos, buf);
      if (context.stop() == ReadContext.Stop.BAD_TOKEN && token == null) {
        token = decodeToken(tokenBytes); // leased on a miss: the DataNode wants the real token
        n = readOnce(context, pos, buf);
      }
      if (n > 0 && reportCorruptOnGoodRead) {
        goodRead(pos, n);
      }
      switch (context.stop()) {
        case NONE:
          return n;
        case CORRUPT:
          corrupt = corrupt((ChecksumException) context.stopCause());
          if (n > 0) {
            return n; // the chunks before the bad one were verified
          }
          throw corrupt;
        default:
          if (n > 0) {
            return n;
          }
          IOException cause = context.stopCause();
          throw cause != null
              ? cause
              : new IOException(
                  "the replica of "
                      + block
                      + " on the local DataNode at "
                      + socketPath
                      + " cannot be read short-circuit now ("
                      + context.stop()
                      + "): the stock reader takes over");
      }
    }

    private int readOnce(ReadContext context, long pos, ByteBuffer buf) throws IOException {
      Token<BlockTokenIdentifier> t = token;
      return reads.read(
          context,
          block,
          t != null ? t : EMPTY_TOKEN,
          socketPath,
          fileName,
          readEnd,
          pos,
          buf,
          verifyChecksum);
    }

    /**
     * This replica verified {@code n} bytes at {@code pos}: where they cover a chunk that failed in
     * another replica, that corruption is the replica's, not the client's.
     */
    private void goodRead(long pos, int n) {
      if (REPORTS.servedGood(block, pos, n)) {
        reportCorruptOnGoodRead = false;
      }
    }

    private IOException corrupt(ChecksumException e) {
      client.replicaFailedChecksum(block, socketPath);
      REPORTS.found(conf, client, fileName, block, socketPath, e.getPos());
      LOG.warn(
          "Checksum error in the short-circuit replica of {} from the DataNode at {}; scr no longer"
              + " serves it, the stock reader reads another replica, and it is reported to the"
              + " NameNode once another replica verifies the chunk that failed: {}",
          block,
          socketPath,
          e.getMessage());
      return new IOException(
          "short-circuit replica of "
              + block
              + " from the DataNode at "
              + socketPath
              + " failed checksum verification (scr will not serve it again; the stock reader"
              + " takes over): "
              + e.getMessage(),
          e);
    }

    @Override
    public void close() {
      held.close();
    }

    @Override
    public boolean isLocal() {
      return true;
    }

    @Override
    public boolean isShortCircuit() {
      return true;
    }

    @Override
    public int getNetworkDistance() {
      return 0;
    }
  }
}
