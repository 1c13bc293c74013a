package io.scr.shim;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistry.SlotRef;
import io.scr.shim.SegmentRegistry.SlotRequestException;
import io.scr.shim.ShimMetrics.OpKind;
import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import io.scr.shm.ShmSupport;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitFdResponse;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockPoolTokenSecretManager;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.common.HdfsServerConstants.ReplicaState;
import org.apache.hadoop.hdfs.server.datanode.DatanodeUtil;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.apache.hadoop.hdfs.server.datanode.ReplicaNotFoundException;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves ops 87, 88 and 89 (and the scr extensions) with the statuses and messages a stock DataNode
 * uses for the same conditions. Runs on worker threads: it opens replica files through {@link
 * FsDatasetSpi}, checks block tokens, creates segments and registers slots, and returns a {@link
 * Reply} for the connection's event loop to send.
 *
 * <p>Thread-safe: holds no mutable state of its own; the registry and limits are thread-safe.
 */
final class ShortCircuitService {
  static final int OP_REQUEST_FDS = 87;
  static final int OP_RELEASE_FDS = 88;
  static final int OP_REQUEST_SHM = 89;

  /** Op.CUSTOM: stock DataNodes answer it by closing the connection ("Unknown op"). */
  static final int OP_SCR_EXTENSION = 127;

  static final int EXT_HELLO = 1;
  static final int EXT_BATCH_RELEASE = 2;
  static final int EXT_BATCH_FDS = 3;

  /** The HELLO answer's message: protocol version and the features offered. */
  static final String EXT_ADVERTISEMENT = "scr-shim-extensions/1 batch-fds batch-release";

  /** Batched fd requests per message: 2 fds each, at most SCM_MAX_FD (253) per sendmsg. */
  static final int EXT_MAX_BATCH = FdPassing.MAX_FDS / 2;

  /**
   * Releases per BATCH_RELEASE message; a larger batch closes the connection. The client sends at
   * most this many ({@code ShortCircuitExchanges.MAX_SLOTS_PER_BATCH_RELEASE}).
   */
  static final int EXT_MAX_RELEASE_BATCH = 512;

  /**
   * Failed releases of one batch answered with their message; later ones get the status alone, so a
   * batch of bogus items cannot make a reply of 94 bytes per item (the client reports the first
   * failure only).
   */
  static final int EXT_DETAILED_ERRORS = 8;

  static final int SHM_LENGTH = SegmentFactory.STOCK_SEGMENT_LENGTH;
  private static final int BLOCK_FORMAT_VERSION = 1;
  private static final Logger LOG = LoggerFactory.getLogger(ShortCircuitService.class);
  private static final ThrottledLog FAILURES = new ThrottledLog();
  private static final SecureRandom SHM_IDS = new SecureRandom();

  private final DatasetAccess dataset;
  private final BlockPoolTokenSecretManager tokens;
  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final SegmentFactory segmentFactory;
  private final ShimMetrics metrics;
  private final DataNodeAccounting accounting;
  private final boolean extensionsEnabled;

  ShortCircuitService(
      DatasetAccess dataset,
      BlockPoolTokenSecretManager tokens,
      SegmentRegistry registry,
      ClientLimits limits,
      SegmentFactory segmentFactory,
      ShimMetrics metrics,
      DataNodeAccounting accounting,
      boolean extensionsEnabled) {
    this.dataset = dataset;
    this.tokens = tokens;
    this.registry = registry;
    this.limits = limits;
    this.segmentFactory = segmentFactory;
    this.metrics = metrics;
    this.accounting = accounting;
    this.extensionsEnabled = extensionsEnabled;
  }

  boolean isServedOp(int op) {
    return op == OP_REQUEST_FDS
        || op == OP_RELEASE_FDS
        || op == OP_REQUEST_SHM
        || (op == OP_SCR_EXTENSION && extensionsEnabled);
  }

  /** The replica files the shim hands out; the DataNode's dataset in production. */
  interface DatasetAccess {
    FsDatasetSpi<?> dataset();

    /**
     * Whether the DataNode has loaded block pool {@code bpid} (registered it with its NameNode), so
     * that a replica missing from the dataset is really not here. Before that, a starting
     * DataNode's dataset lacks every replica of the pool (its volumes are still being scanned).
     */
    default boolean blockPoolReady(String bpid) {
      return true;
    }

    /**
     * Whether block tokens are enforced for pool {@code bpid}: stock decides by the keys its
     * NameNode exported at registration ({@code ExportedBlockKeys.isBlockTokenEnabled}, which sets
     * the DataNode's {@code isBlockTokenEnabled}), not by the DataNode's own {@code
     * dfs.block.access.token.enable}. True (enforce) unless told otherwise.
     */
    default boolean blockTokensEnabled(String bpid) {
      return true;
    }
  }

  /** Handles one decoded request from client {@code pid}. Never throws. */
  Reply handle(int op, byte[] body, int pid) {
    long start = System.nanoTime();
    OpKind kind = kindOf(op, body);
    try {
      switch (op) {
        case OP_REQUEST_FDS:
          return requestFds(OpRequestShortCircuitAccessProto.parseFrom(body), pid, start);
        case OP_RELEASE_FDS:
          return releaseFds(ReleaseShortCircuitAccessRequestProto.parseFrom(body), pid, start);
        case OP_REQUEST_SHM:
          return requestShm(ShortCircuitShmRequestProto.parseFrom(body), pid, start);
        case OP_SCR_EXTENSION:
          return extension(body, pid, start);
        default:
          metrics.reject(ShimMetrics.Rejection.UNKNOWN_OP);
          return Reply.closeOnly(kind, start);
      }
    } catch (InvalidProtocolBufferException e) {
      // Stock: the parse error kills the xceiver and the connection, with no reply.
      LOG.debug("Malformed op {} request from pid {}: {}", op, pid, e.toString());
      metrics.reject(ShimMetrics.Rejection.BAD_PROTOBUF);
      return Reply.closeOnly(kind, start);
    } catch (Throwable t) {
      // Stock catches Throwable per xceiver and closes that connection. An Error here (an
      // OutOfMemoryError, InternalError from a truncated mapping, LinkageError) concerns this
      // request: letting it escape would end the worker task without a reply, leaving the
      // connection BUSY forever. What the request had counted is released by its own finally
      // blocks; the connection is closed without a reply, like stock's.
      metrics.reject(ShimMetrics.Rejection.INTERNAL_ERROR);
      FAILURES.log(LOG, "scr shim failed op " + op + " for pid " + pid, t);
      return Reply.closeOnly(kind, start);
    }
  }

  /**
   * The reply for a connection refused by a per-client limit: ERROR with the reason, then close.
   */
  Reply limitReply(int op, String reason) {
    long start = System.nanoTime();
    Reply r;
    switch (op) {
      case OP_RELEASE_FDS:
        r =
            reply(
                OpKind.RELEASE_FDS,
                Status.ERROR,
                ReleaseShortCircuitAccessResponseProto.newBuilder()
                    .setStatus(Status.ERROR)
                    .setError(reason)
                    .build(),
                start);
        break;
      case OP_REQUEST_SHM:
        r =
            reply(
                OpKind.REQUEST_SHM,
                Status.ERROR,
                ShortCircuitShmResponseProto.newBuilder()
                    .setStatus(Status.ERROR)
                    .setError(reason)
                    .build(),
                start);
        break;
      default:
        r = blockOp(OpKind.REQUEST_FDS, Status.ERROR, reason, start);
        break;
    }
    r.closeAfter = true;
    return r;
  }

  private static OpKind kindOf(int op, byte[] body) {
    switch (op) {
      case OP_RELEASE_FDS:
        return OpKind.RELEASE_FDS;
      case OP_REQUEST_SHM:
        return OpKind.REQUEST_SHM;
      case OP_SCR_EXTENSION:
        if (body.length > 0 && body[0] == EXT_BATCH_FDS) {
          return OpKind.EXT_BATCH_FDS;
        }
        if (body.length > 0 && body[0] == EXT_BATCH_RELEASE) {
          return OpKind.EXT_BATCH_RELEASE;
        }
        return OpKind.EXT_HELLO;
      default:
        return OpKind.REQUEST_FDS;
    }
  }

  // ---- op 87 ---------------------------------------------------------------------------------

  private Reply requestFds(OpRequestShortCircuitAccessProto req, int pid, long start) {
    FdGrant grant = grant(req, pid);
    Reply r = reply(OpKind.REQUEST_FDS, grant.response.getStatus(), grant.response, start);
    r.openStartNanos = grant.openStartNanos;
    r.openEndNanos = grant.openEndNanos;
    r.builtNanos = System.nanoTime();
    if (grant.accessTokenFailure) {
      // Stock writes ERROR_ACCESS_TOKEN, closes the socket and registers nothing.
      r.closeAfter = true;
      return r;
    }
    ExtendedBlock blk = grant.block;
    r.onDone = ok -> accounting.fdRequestDone(blk, ok, start);
    if (grant.data != null) {
      r.streams.add(grant.data);
      r.streams.add(grant.meta);
      r.fdReleases.add(grant.releaseFds);
      boolean receipt = req.getSupportsReceiptVerification();
      r.dataByte =
          (byte)
              (receipt
                  ? ShortCircuitFdResponse.USE_RECEIPT_VERIFICATION_VALUE
                  : ShortCircuitFdResponse.DO_NOT_USE_RECEIPT_VERIFICATION_VALUE);
      r.awaitReceipt = receipt;
      r.onFailure = grant.undo;
    }
    return r;
  }

  /** The outcome of one fd request: a response and, on success, two open streams. */
  private static final class FdGrant {
    ExtendedBlock block;
    BlockOpResponseProto response;
    FileInputStream data;
    FileInputStream meta;
    boolean accessTokenFailure;
    Runnable undo;

    /** Gives back the reservation of {@link #data} and {@link #meta} (ClientLimits.reserveFds). */
    Runnable releaseFds;

    /** Phase marks ({@link ShimMetrics.FdPhase#OPEN}): before and after opening the files. */
    long openStartNanos;

    long openEndNanos;
  }

  private FdGrant grant(OpRequestShortCircuitAccessProto req, int pid) {
    FdGrant g = new FdGrant();
    ExtendedBlock blk = PBHelperClient.convert(req.getHeader().getBlock());
    g.block = blk;
    if (!dataset.blockPoolReady(blk.getBlockPoolId())) {
      // Stock waits for the block pool (checkAndWaitForBP, before the token check) and then
      // answers this. A worker thread must not wait, and "No data exists" would tell the client
      // the replica is not here, which it remembers (not asking this DataNode again for that block
      // for a while).
      g.response =
          BlockOpResponseProto.newBuilder()
              .setStatus(Status.ERROR)
              .setMessage("Not ready to serve the block pool, " + blk.getBlockPoolId() + ".")
              .build();
      return g;
    }
    String tokenProblem = checkToken(req, blk);
    if (tokenProblem != null) {
      metrics.reject(ShimMetrics.Rejection.ACCESS_TOKEN);
      LOG.warn(
          "Block token verification failed: op=REQUEST_SHORT_CIRCUIT_FDS, client pid={},"
              + " message={}",
          pid,
          tokenProblem);
      g.accessTokenFailure = true;
      g.response = BlockOpResponseProto.newBuilder().setStatus(Status.ERROR_ACCESS_TOKEN).build();
      return g;
    }
    if (req.getMaxVersion() < BLOCK_FORMAT_VERSION) {
      g.response =
          BlockOpResponseProto.newBuilder()
              .setStatus(Status.ERROR_UNSUPPORTED)
              .setShortCircuitAccessVersion(BLOCK_FORMAT_VERSION)
              .setMessage(
                  "Your client is too old to read this block!  Its format version is "
                      + BLOCK_FORMAT_VERSION
                      + ", but the highest format version you can read is "
                      + req.getMaxVersion())
              .build();
      return g;
    }
    String tooManyFds = limits.reserveFds(pid, 2);
    if (tooManyFds != null) {
      // ERROR, not ERROR_UNSUPPORTED: the client reads this block the stock way and asks again
      // for the next one, by when its earlier replies may have been read.
      metrics.reject(ShimMetrics.Rejection.PENDING_FDS);
      g.response =
          BlockOpResponseProto.newBuilder().setStatus(Status.ERROR).setMessage(tooManyFds).build();
      return g;
    }
    boolean reserved = true;
    FileInputStream data = null;
    FileInputStream meta = null;
    SlotRef registered = null;
    try {
      g.openStartNanos = System.nanoTime();
      FsDatasetSpi<?> ds = dataset.dataset();
      InputStream in = ds.getBlockInputStream(blk, 0);
      if (!(in instanceof FileInputStream)) {
        in.close();
        accounting.fdRequestOpening();
        return unsupported(
            g, "This DataNode's FsDatasetSpi does not support short-circuit local reads");
      }
      data = (FileInputStream) in;
      try {
        meta = DatanodeUtil.getMetaDataInputStream(blk, ds);
      } catch (ClassCastException e) {
        accounting.fdRequestOpening();
        return unsupported(
            g, "This DataNode's FsDatasetSpi does not support short-circuit local reads");
      }
      g.openEndNanos = System.nanoTime();
      Replica replica = replicaOf(ds, blk);
      if (replica.getState() != ReplicaState.FINALIZED) {
        metrics.nonFinalizedReplicasServed.increment();
      }
      if (req.hasSlotId()) {
        registered = registerSlot(ds, req.getSlotId(), blk, replica, pid);
      }
      // Stock registers the slot first and then counts the request where it opens the files.
      accounting.fdRequestOpening();
      g.response =
          BlockOpResponseProto.newBuilder()
              .setStatus(Status.SUCCESS)
              .setShortCircuitAccessVersion(BLOCK_FORMAT_VERSION)
              .build();
      g.data = data;
      g.meta = meta;
      g.releaseFds = () -> limits.releaseFds(pid, 2);
      reserved = false; // the reply owns the fds and their reservation now
      data = null;
      meta = null;
      SlotRef ref = registered;
      if (ref != null) {
        g.undo = () -> unregisterAfterFailure(ref);
      }
      registered = null;
      return g;
    } catch (IOException e) {
      if (!(e instanceof SlotRequestException)) {
        accounting.fdRequestOpening(); // stock got as far as opening the files
      }
      // Same mapping as stock: any other IOException is ERROR with its message.
      if (isReplicaAbsent(e)) {
        // Not a DataNode problem: a client asked the wrong local DataNode (several per host) or
        // a replica that moved. Stock logs a stack trace at ERROR for it; one line is enough, and
        // writing a trace per request made every refusal cost a log write.
        LOG.info(
            "Request short-circuit read file descriptor refused for pid {}: {}",
            pid,
            e.getMessage());
      } else {
        LOG.error("Request short-circuit read file descriptor failed with unknown error.", e);
      }
      g.response =
          BlockOpResponseProto.newBuilder()
              .setStatus(Status.ERROR)
              .setMessage(String.valueOf(e.getMessage()))
              .build();
      return g;
    } finally {
      closeQuietly(data);
      closeQuietly(meta);
      if (reserved) {
        limits.releaseFds(pid, 2);
      }
      if (registered != null) {
        unregisterAfterFailure(registered);
      }
    }
  }

  /**
   * Whether opening the replica failed because this DataNode holds no such replica (unknown block,
   * or another generation stamp): {@code FsDatasetImpl.getBlockInputStream}'s "No data exists for
   * block", {@code ReplicaNotFoundException}, and {@link #replicaOf}'s lookup.
   */
  static boolean isReplicaAbsent(IOException e) {
    if (e instanceof ReplicaNotFoundException) {
      return true;
    }
    String m = e.getMessage();
    return m != null
        && (m.startsWith("No data exists for block") || m.startsWith("Replica not found for"));
  }

  private static FdGrant unsupported(FdGrant g, String message) {
    g.response =
        BlockOpResponseProto.newBuilder()
            .setStatus(Status.ERROR_UNSUPPORTED)
            .setMessage(message)
            .build();
    return g;
  }

  @SuppressWarnings("deprecation") // getReplica is the only non-copying lookup FsDatasetSpi offers
  private static Replica replicaOf(FsDatasetSpi<?> ds, ExtendedBlock blk) throws IOException {
    Replica replica = ds.getReplica(blk.getBlockPoolId(), blk.getBlockId());
    if (replica == null || replica.getGenerationStamp() != blk.getGenerationStamp()) {
      // The replica changed between opening its files and this lookup.
      throw new IOException("Replica not found for " + blk);
    }
    return replica;
  }

  private SlotRef registerSlot(
      FsDatasetSpi<?> ds,
      ShortCircuitShmSlotProto slot,
      ExtendedBlock blk,
      Replica replica,
      int pid)
      throws IOException {
    ShmId id = ShmId.of(slot.getShmId().getHi(), slot.getShmId().getLo());
    ShimSegment seg = registry.find(id, pid);
    if (seg == null) {
      throw new SlotRequestException(SegmentRegistry.noSuchSegment(id));
    }
    boolean cached = ds.isCached(blk.getBlockPoolId(), blk.getBlockId());
    return registry.register(
        seg,
        slot.getSlotIdx(),
        new BlockKey(blk.getBlockPoolId(), blk.getBlockId()),
        replica,
        blk.getGenerationStamp(),
        cached);
  }

  private void unregisterAfterFailure(SlotRef ref) {
    LOG.info(
        "Unregistering slot {} of segment {} because the requestShortCircuitFdsForRead operation"
            + " failed.",
        ref.index,
        ref.segment.segment.id());
    try {
      registry.unregister(ref.segment, ref.index);
    } catch (SlotRequestException e) {
      LOG.debug("Slot already gone: {}", e.getMessage());
    }
  }

  /**
   * Null when the token is acceptable (or tokens are off for the block's pool), else why not. As
   * stock's {@code DataXceiver.checkAccess}: a READ token for exactly this block of this pool,
   * checked by the DataNode's {@code BlockPoolTokenSecretManager}.
   */
  private String checkToken(OpRequestShortCircuitAccessProto req, ExtendedBlock blk) {
    if (tokens == null || !dataset.blockTokensEnabled(blk.getBlockPoolId())) {
      return null;
    }
    Token<BlockTokenIdentifier> token = PBHelperClient.convert(req.getHeader().getToken());
    String oversized = TokenIdentifierBounds.problem(token.getIdentifier());
    if (oversized != null) {
      return oversized; // Hadoop's parser would allocate what the identifier claims
    }
    try {
      tokens.checkAccess(token, null, blk, BlockTokenIdentifier.AccessMode.READ);
      return null;
    } catch (InvalidToken e) {
      return e.getMessage();
    } catch (RuntimeException e) {
      // e.g. the block pool is unknown to the secret manager: no valid token can exist.
      return e.toString();
    }
  }

  // ---- op 88 ---------------------------------------------------------------------------------

  private Reply releaseFds(ReleaseShortCircuitAccessRequestProto req, int pid, long start) {
    ReleaseShortCircuitAccessResponseProto resp = release(req, pid);
    Reply r = reply(OpKind.RELEASE_FDS, resp.getStatus(), resp, start);
    ShortCircuitShmSlotProto slot = req.getSlotId();
    r.onDone =
        ok ->
            accounting.slotReleaseDone(
                slot.getShmId().getHi(), slot.getShmId().getLo(), slot.getSlotIdx(), ok);
    return r;
  }

  private ReleaseShortCircuitAccessResponseProto release(
      ReleaseShortCircuitAccessRequestProto req, int pid) {
    ShortCircuitShmSlotProto slot = req.getSlotId();
    ShmId id = ShmId.of(slot.getShmId().getHi(), slot.getShmId().getLo());
    ShimSegment seg = registry.find(id, pid);
    String error;
    if (seg == null) {
      error = SegmentRegistry.noSuchSegment(id);
    } else {
      try {
        registry.unregister(seg, slot.getSlotIdx());
        return ReleaseShortCircuitAccessResponseProto.newBuilder()
            .setStatus(Status.SUCCESS)
            .build();
      } catch (SlotRequestException e) {
        error = e.getMessage();
      }
    }
    return ReleaseShortCircuitAccessResponseProto.newBuilder()
        .setStatus(Status.ERROR_INVALID)
        .setError(error)
        .build();
  }

  // ---- op 89 ---------------------------------------------------------------------------------

  private Reply requestShm(ShortCircuitShmRequestProto req, int pid, long start) {
    Reply r = createShm(req, pid, start);
    if (r.onDone == null) {
      // Refused before a segment existed: stock's "shmId: n/a, success: false" line.
      String client = req.getClientName();
      r.onDone = ok -> accounting.shmRequestDone(client, null, false);
    }
    return r;
  }

  private Reply createShm(ShortCircuitShmRequestProto req, int pid, long start) {
    if (!ShmSupport.isAvailable()) {
      return shmError(
          Status.ERROR_UNSUPPORTED,
          "This datanode has not been configured to support short-circuit shared memory"
              + " segments.",
          start);
    }
    String over = limits.addSegment(pid);
    if (over != null) {
      // ERROR_UNSUPPORTED, not ERROR: a stock client re-asks at once on ERROR, in a loop, while
      // ERROR_UNSUPPORTED makes it read without slots (time-based staleness) from now on.
      metrics.reject(ShimMetrics.Rejection.CLIENT_SEGMENTS);
      return shmError(Status.ERROR_UNSUPPORTED, over, start);
    }
    SharedMemoryFd fd = null;
    Segment segment = null;
    ShimSegment added = null;
    boolean counted = true;
    try {
      fd = segmentFactory.createFd(SHM_LENGTH);
      ShimSegment seg = null;
      while (seg == null) {
        if (segment != null) {
          segment.close();
        }
        segment = Segment.map(newShmId(), fd.fd(), SHM_LENGTH);
        seg = registry.add(segment, pid, fd);
      }
      segment = null;
      added = seg;
      ShmId id = seg.segment.id();
      LOG.debug("Created segment {} for client {} (pid {})", id, req.getClientName(), pid);
      Reply r =
          reply(
              OpKind.REQUEST_SHM,
              Status.SUCCESS,
              ShortCircuitShmResponseProto.newBuilder()
                  .setStatus(Status.SUCCESS)
                  .setId(ShortCircuitShmIdProto.newBuilder().setHi(id.hi()).setLo(id.lo()))
                  .build(),
              start);
      r.shmFd = fd;
      r.dataByte = 0;
      r.newSegment = seg;
      String client = req.getClientName();
      long[] shm = {id.hi(), id.lo()};
      r.onDone = ok -> accounting.shmRequestDone(client, ok ? shm : null, ok);
      fd = null;
      added = null;
      counted = false;
      return r;
    } catch (IOException e) {
      LOG.warn("Failed to create a shared memory segment for pid {}", pid, e);
      return shmError(
          Status.ERROR, "Failed to create shared file descriptor: " + e.getMessage(), start);
    } finally {
      // Also on an Error: the segment and its count must not outlive a request that failed.
      if (added != null) {
        registry.remove(added);
        counted = false; // removing a registered segment uncounts it
      }
      if (counted) {
        limits.removeSegment(pid);
      }
      if (fd != null) {
        fd.close();
      }
      if (segment != null) {
        segment.close();
      }
    }
  }

  /**
   * Whether a request of {@code op} touches memory only (never storage nor the dataset's lock), so
   * that an event loop may serve it: a single release, and a segment request while segments are
   * memfds (a fallback directory could be on a disk).
   */
  boolean servedInMemory(int op) {
    return op == OP_RELEASE_FDS || (op == OP_REQUEST_SHM && segmentFactory.usesMemfd());
  }

  /**
   * A segment id no client can predict. An id names the segment in RELEASE_SHORT_CIRCUIT_FDS and
   * slot registrations; ids from {@code ThreadLocalRandom} (an invertible mix of a counter) let a
   * client that saw one id compute the next ones handed out on that worker thread. One {@code
   * SecureRandom} call (a few microseconds) per segment is noise beside creating and mapping it.
   */
  static ShmId newShmId() {
    return ShmId.of(SHM_IDS.nextLong(), SHM_IDS.nextLong());
  }

  private Reply shmError(Status status, String message, long start) {
    return reply(
        OpKind.REQUEST_SHM,
        status,
        ShortCircuitShmResponseProto.newBuilder().setStatus(status).setError(message).build(),
        start);
  }

  // ---- op 127: scr extensions -----------------------------------------------------------------

  private Reply extension(byte[] body, int pid, long start) throws InvalidProtocolBufferException {
    if (body.length == 0) {
      throw new InvalidProtocolBufferException("empty scr extension request");
    }
    int sub = body[0];
    ByteArrayInputStream in = new ByteArrayInputStream(body, 1, body.length - 1);
    switch (sub) {
      case EXT_HELLO:
        return blockOp(OpKind.EXT_HELLO, Status.SUCCESS, EXT_ADVERTISEMENT, start);
      case EXT_BATCH_RELEASE:
        {
          ByteArrayOutputStream out = new ByteArrayOutputStream();
          int n = 0;
          int errors = 0;
          while (in.available() > 0) {
            if (n == EXT_MAX_RELEASE_BATCH) {
              // Uncapped, one 64 KiB frame of bogus items made a ~560 KB reply per connection.
              throw new InvalidProtocolBufferException(
                  "batch of more than " + EXT_MAX_RELEASE_BATCH + " releases");
            }
            ReleaseShortCircuitAccessRequestProto req =
                parseDelimited(ReleaseShortCircuitAccessRequestProto.parser(), in);
            ReleaseShortCircuitAccessResponseProto resp = release(req, pid);
            if (resp.getStatus() != Status.SUCCESS && ++errors > EXT_DETAILED_ERRORS) {
              resp = resp.toBuilder().clearError().build(); // the status alone, a few bytes
            }
            writeDelimited(resp, out);
            n++;
          }
          if (n == 0) {
            throw new InvalidProtocolBufferException("empty batch");
          }
          return new Reply(OpKind.EXT_BATCH_RELEASE, Status.SUCCESS, out.toByteArray(), start);
        }
      case EXT_BATCH_FDS:
        return batchFds(in, pid, start);
      default:
        throw new InvalidProtocolBufferException("unknown scr extension " + sub);
    }
  }

  /**
   * Batched REQUEST_SHORT_CIRCUIT_FDS: one BlockOpResponseProto per request, in order, then one
   * sendmsg with the (data, meta) fds of every SUCCESS in order and one byte; a receipt byte is
   * awaited if any request asked for it. Token failures are per item (the connection stays).
   */
  private Reply batchFds(ByteArrayInputStream in, int pid, long start)
      throws InvalidProtocolBufferException {
    List<OpRequestShortCircuitAccessProto> reqs = new ArrayList<>();
    while (in.available() > 0) {
      reqs.add(parseDelimited(OpRequestShortCircuitAccessProto.parser(), in));
    }
    if (reqs.isEmpty() || reqs.size() > EXT_MAX_BATCH) {
      throw new InvalidProtocolBufferException(
          "batch of " + reqs.size() + " requests; allowed 1.." + EXT_MAX_BATCH);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<Runnable> undos = new ArrayList<>();
    List<FileInputStream> streams = new ArrayList<>();
    List<Runnable> releases = new ArrayList<>();
    List<ExtendedBlock> granted = new ArrayList<>();
    boolean receipt = false;
    for (OpRequestShortCircuitAccessProto req : reqs) {
      FdGrant g = grant(req, pid);
      writeDelimited(g.response, out);
      if (g.data == null && !g.accessTokenFailure) {
        accounting.fdRequestDone(g.block, false, start);
      }
      if (g.data != null) {
        granted.add(g.block);
        streams.add(g.data);
        streams.add(g.meta);
        releases.add(g.releaseFds);
        receipt |= req.getSupportsReceiptVerification();
        if (g.undo != null) {
          undos.add(g.undo);
        }
      }
    }
    Reply r = new Reply(OpKind.EXT_BATCH_FDS, Status.SUCCESS, out.toByteArray(), start);
    r.streams.addAll(streams);
    r.fdReleases.addAll(releases);
    if (!streams.isEmpty()) {
      r.dataByte = (byte) (receipt ? 1 : 0);
      r.awaitReceipt = receipt;
      if (!undos.isEmpty()) {
        r.onFailure = () -> undos.forEach(Runnable::run);
      }
      r.onDone =
          ok -> {
            for (ExtendedBlock b : granted) {
              accounting.fdRequestDone(b, ok, start);
            }
          };
    }
    return r;
  }

  private static <T> T parseDelimited(
      org.apache.hadoop.thirdparty.protobuf.Parser<T> parser, ByteArrayInputStream in)
      throws InvalidProtocolBufferException {
    T t = parser.parseDelimitedFrom(in);
    if (t == null) {
      throw new InvalidProtocolBufferException("truncated batch");
    }
    return t;
  }

  // ---- helpers -------------------------------------------------------------------------------

  private Reply blockOp(OpKind kind, Status status, String message, long start) {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder().setStatus(status);
    if (message != null) {
      b.setMessage(message);
    }
    return reply(kind, status, b.build(), start);
  }

  private static Reply reply(OpKind kind, Status status, MessageLite msg, long start) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(msg.getSerializedSize() + 5);
    writeDelimited(msg, out);
    return new Reply(kind, status, out.toByteArray(), start);
  }

  private static void writeDelimited(MessageLite msg, ByteArrayOutputStream out) {
    try {
      msg.writeDelimitedTo(out);
    } catch (IOException e) {
      throw new IllegalStateException("cannot happen: in-memory stream", e);
    }
  }

  private static void closeQuietly(FileInputStream s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        LOG.debug("close failed", e);
      }
    }
  }
}
