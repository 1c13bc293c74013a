package io.scr.shim;

import io.scr.shim.SegmentRegistry.BlockKey;
import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistry.SlotRef;
import io.scr.shim.SegmentRegistry.SlotRequestException;
import io.scr.shm.ShmId;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Grants one fd request (REQUEST_SHORT_CIRCUIT_FDS, op 87, alone or as an item of a batch) with the
 * checks and statuses of a stock DataNode's {@code DataXceiver.requestShortCircuitFds}: the block
 * pool is loaded, the block token allows READ of exactly this block, the client's format version is
 * new enough, the client has fds to spare; then it opens the replica's data and meta files through
 * {@link FsDatasetSpi} and registers the client's slot for the replica.
 *
 * <p>Thread-safe: holds no mutable state of its own (the registry and limits are thread-safe); runs
 * on an event loop or a worker, whichever serves the request.
 */
final class FdGrants {
  static final int BLOCK_FORMAT_VERSION = 1;
  private static final Logger LOG = LoggerFactory.getLogger(FdGrants.class);

  private final ShortCircuitService.DatasetAccess dataset;
  private final BlockPoolTokenSecretManager tokens;
  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final ShimMetrics metrics;
  private final DataNodeAccounting accounting;
  private final Ticker ticker;

  FdGrants(
      ShortCircuitService.DatasetAccess dataset,
      BlockPoolTokenSecretManager tokens,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      DataNodeAccounting accounting,
      Ticker ticker) {
    this.dataset = dataset;
    this.tokens = tokens;
    this.registry = registry;
    this.limits = limits;
    this.metrics = metrics;
    this.accounting = accounting;
    this.ticker = ticker;
  }

  /** The outcome of one fd request: a response and, on success, two open streams. */
  static final class FdGrant {
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

  FdGrant grant(OpRequestShortCircuitAccessProto req, int pid) {
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
      g.openStartNanos = ticker.read();
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
      g.openEndNanos = ticker.read();
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
      } else if (e instanceof SlotRequestException) {
        // The client's slot cannot be registered: most often a client that gave up on this
        // request (its timeout) and freed the slot, clearing VALID, before it was served. Not a
        // DataNode error; stock logs an ERROR with a stack trace per such request.
        LOG.info(
            "Request short-circuit read file descriptor for pid {} refused its slot: {}",
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
   * The answer to an op-127 REPLICA_STATE request: what the DataNode's memory says of the replica
   * of the requested block, after the same block pool and token checks as op 87. SUCCESS carries
   * {@link #formatReplicaState} in its message; a replica the dataset does not hold is ERROR with
   * the dataset's "Replica not found for" wording. Cheap: one replica-map lookup and, for a replica
   * being written, its synchronized {@code getLastChecksumAndDataLen}; no file is opened.
   */
  BlockOpResponseProto replicaState(OpRequestShortCircuitAccessProto req, int pid) {
    ExtendedBlock blk = PBHelperClient.convert(req.getHeader().getBlock());
    if (!dataset.blockPoolReady(blk.getBlockPoolId())) {
      return BlockOpResponseProto.newBuilder()
          .setStatus(Status.ERROR)
          .setMessage("Not ready to serve the block pool, " + blk.getBlockPoolId() + ".")
          .build();
    }
    String tokenProblem = checkToken(req, blk);
    if (tokenProblem != null) {
      metrics.reject(ShimMetrics.Rejection.ACCESS_TOKEN);
      LOG.warn(
          "Block token verification failed: op=REPLICA_STATE, client pid={}, message={}",
          pid,
          tokenProblem);
      return BlockOpResponseProto.newBuilder().setStatus(Status.ERROR_ACCESS_TOKEN).build();
    }
    @SuppressWarnings("deprecation") // the one FsDatasetSpi call that returns the replica object
    org.apache.hadoop.hdfs.server.datanode.Replica r =
        dataset.dataset().getReplica(blk.getBlockPoolId(), blk.getBlockId());
    if (r == null) {
      return BlockOpResponseProto.newBuilder()
          .setStatus(Status.ERROR)
          .setMessage("Replica not found for " + blk)
          .build();
    }
    return BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setMessage(formatReplicaState(r))
        .build();
  }

  /**
   * {@code gs=<n> state=<RBW|FINALIZED|...> visible=<n> ondisk=<n> sum=<hex|->}: for a replica in a
   * pipeline, visible is {@code getBytesAcked} and (ondisk, sum) the consistent pair of {@code
   * getLastChecksumAndDataLen} (sum is the partial last chunk's checksum, "-" when the data ends on
   * a chunk boundary); for any other replica visible and ondisk are its visible length and bytes on
   * disk, and sum is "-".
   */
  static String formatReplicaState(org.apache.hadoop.hdfs.server.datanode.Replica r) {
    long gs = r.getGenerationStamp();
    String state = String.valueOf(r.getState());
    long visible;
    long onDisk;
    byte[] sum = null;
    if (r instanceof org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline) {
      org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline p =
          (org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline) r;
      org.apache.hadoop.hdfs.server.datanode.ChunkChecksum c = p.getLastChecksumAndDataLen();
      visible = p.getBytesAcked();
      onDisk = c.getDataLength();
      sum = c.getChecksum();
    } else {
      visible = r.getVisibleLength();
      onDisk = r.getBytesOnDisk();
    }
    StringBuilder b = new StringBuilder(96);
    b.append("gs=").append(gs);
    b.append(" state=").append(state);
    b.append(" visible=").append(visible);
    b.append(" ondisk=").append(onDisk);
    b.append(" sum=");
    if (sum == null || sum.length == 0) {
      b.append('-');
    } else {
      for (byte x : sum) {
        b.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
      }
    }
    return b.toString();
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
