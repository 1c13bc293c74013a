package io.scr.shim;

import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shim.SegmentRegistry.SlotRequestException;
import io.scr.shim.ShimMetrics.OpKind;
import io.scr.shm.SegmentFactory;
import io.scr.shm.ShmId;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitFdResponse;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockPoolTokenSecretManager;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one decoded request: ops 87, 88 and 89 and the scr extensions (op 127), with the statuses
 * and messages a stock DataNode uses for the same conditions. Routes each op to the class that does
 * its work ({@link FdGrants} for fds, {@link SegmentGrants} for segments, the {@link
 * SegmentRegistry} for releases) and encodes the {@link Reply} that the connection sends. Runs on
 * whichever thread serves the request (an event loop or a worker, {@link ShimConnectionHandler}
 * decides).
 *
 * <p>Thread-safe: holds no mutable state of its own; the registry, limits and the classes above are
 * thread-safe.
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

  /**
   * A liveness probe: answered SUCCESS by the event loop that decoded it, touching neither the
   * dataset nor the workers (docs/shim.md, "Liveness probe").
   */
  static final int EXT_PING = 4;

  /**
   * What the DataNode's memory says of one replica (generation stamp, state, visible length, bytes
   * on disk and the partial last chunk's checksum): how a client verifies the tail of a block being
   * written (docs/shim.md, "Extensions").
   */
  static final int EXT_REPLICA_STATE = 5;

  /** The HELLO slot's segment id ({@link #isHello}): {@code "scr-shim"}, {@code "hello/1\0"}. */
  static final long HELLO_SHM_HI = 0x7363722d7368696dL;

  static final long HELLO_SHM_LO = 0x68656c6c6f2f3100L;

  /** The HELLO answer's message: protocol version and the features offered. */
  static final String EXT_ADVERTISEMENT =
      "scr-shim-extensions/1 batch-fds batch-release ping replica-state";

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

  static final int SHM_LENGTH = SegmentGrants.SHM_LENGTH;
  private static final Logger LOG = LoggerFactory.getLogger(ShortCircuitService.class);
  private static final ThrottledLog FAILURES = new ThrottledLog(Ticker.SYSTEM);

  private final SegmentRegistry registry;
  private final ShimMetrics metrics;
  private final DataNodeAccounting accounting;
  private final boolean extensionsEnabled;
  private final Ticker ticker;
  private final FdGrants fds;
  private final SegmentGrants segments;

  ShortCircuitService(
      DatasetAccess dataset,
      BlockPoolTokenSecretManager tokens,
      SegmentRegistry registry,
      ClientLimits limits,
      SegmentFactory segmentFactory,
      ShimMetrics metrics,
      DataNodeAccounting accounting,
      boolean extensionsEnabled,
      Ticker ticker) {
    this.registry = registry;
    this.metrics = metrics;
    this.accounting = accounting;
    this.extensionsEnabled = extensionsEnabled;
    this.ticker = ticker;
    this.fds = new FdGrants(dataset, tokens, registry, limits, metrics, accounting, ticker);
    this.segments = new SegmentGrants(registry, limits, segmentFactory, metrics, accounting);
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

  /** Handles one request that was not decoded from a frame (tests, the batch paths). */
  Reply handle(int op, byte[] body, int pid) {
    return handle(op, body, pid, 0);
  }

  /**
   * Handles one request from client {@code pid} whose frame was decoded at {@code decodedNanos} (on
   * the shim's ticker; 0 if none). Never throws.
   */
  Reply handle(int op, byte[] body, int pid, long decodedNanos) {
    long start = ticker.read();
    OpKind kind = kindOf(op, body);
    try {
      switch (op) {
        case OP_REQUEST_FDS:
          return requestFds(
              OpRequestShortCircuitAccessProto.parseFrom(body), pid, start, decodedNanos);
        case OP_RELEASE_FDS:
          return releaseFds(ReleaseShortCircuitAccessRequestProto.parseFrom(body), pid, start)
              .decodedAt(decodedNanos)
              .build();
        case OP_REQUEST_SHM:
          return segments.requestShm(
              ShortCircuitShmRequestProto.parseFrom(body), pid, start, decodedNanos);
        case OP_SCR_EXTENSION:
          return extension(body, pid, start).decodedAt(decodedNanos).build();
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
    long start = ticker.read();
    Reply.Builder r;
    switch (op) {
      case OP_RELEASE_FDS:
        r =
            Replies.of(
                OpKind.RELEASE_FDS,
                Status.ERROR,
                ReleaseShortCircuitAccessResponseProto.newBuilder()
                    .setStatus(Status.ERROR)
                    .setError(reason)
                    .build(),
                start);
        break;
      case OP_REQUEST_SHM:
        r = SegmentGrants.shmError(Status.ERROR, reason, start);
        break;
      default:
        r = Replies.blockOp(OpKind.REQUEST_FDS, Status.ERROR, reason, start);
        break;
    }
    return r.closeAfter().build();
  }

  /** The last guard's reply when serving a request failed outside {@link #handle}: close. */
  Reply internalError() {
    return Reply.closeOnly(OpKind.REQUEST_FDS, ticker.read());
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
        if (body.length > 0 && body[0] == EXT_PING) {
          return OpKind.EXT_PING;
        }
        if (body.length > 0 && body[0] == EXT_REPLICA_STATE) {
          return OpKind.EXT_REPLICA_STATE;
        }
        return OpKind.EXT_HELLO;
      default:
        return OpKind.REQUEST_FDS;
    }
  }

  /**
   * Whether a request touches memory only (never storage, the dataset's lock nor the workers), so
   * that an event loop may serve it: a single release, a segment request while segments are memfds
   * (a fallback directory could be on a disk), and a liveness probe.
   */
  boolean servedInMemory(int op, byte[] body) {
    return op == OP_RELEASE_FDS
        || (op == OP_REQUEST_SHM && segments.inMemory())
        || isPing(op, body);
  }

  /**
   * Whether {@code op} and {@code body} are a liveness probe (op 127, sub-op {@link #EXT_PING}).
   */
  boolean isPing(int op, byte[] body) {
    return op == OP_SCR_EXTENSION && extensionsEnabled && body.length == 1 && body[0] == EXT_PING;
  }

  // ---- op 87 ---------------------------------------------------------------------------------

  private Reply requestFds(
      OpRequestShortCircuitAccessProto req, int pid, long start, long decodedNanos) {
    FdGrants.FdGrant grant = fds.grant(req, pid);
    Reply.Builder r =
        Replies.of(OpKind.REQUEST_FDS, grant.response.getStatus(), grant.response, start)
            .decodedAt(decodedNanos)
            .phases(grant.openStartNanos, grant.openEndNanos, ticker.read());
    if (grant.accessTokenFailure) {
      // Stock writes ERROR_ACCESS_TOKEN, closes the socket and registers nothing.
      return r.closeAfter().build();
    }
    ExtendedBlock blk = grant.block;
    r.onDone(ok -> accounting.fdRequestDone(blk, ok, start));
    if (grant.data != null) {
      boolean receipt = req.getSupportsReceiptVerification();
      r.passStreams(
              Arrays.asList(grant.data, grant.meta),
              Collections.singletonList(grant.releaseFds),
              (byte)
                  (receipt
                      ? ShortCircuitFdResponse.USE_RECEIPT_VERIFICATION_VALUE
                      : ShortCircuitFdResponse.DO_NOT_USE_RECEIPT_VERIFICATION_VALUE))
          .awaitReceipt(receipt)
          .onFailure(grant.undo);
    }
    return r.build();
  }

  // ---- op 88 ---------------------------------------------------------------------------------

  private Reply.Builder releaseFds(ReleaseShortCircuitAccessRequestProto req, int pid, long start) {
    ShortCircuitShmSlotProto slot = req.getSlotId();
    if (extensionsEnabled && isHello(slot)) {
      return Replies.of(
          OpKind.EXT_HELLO,
          Status.SUCCESS,
          ReleaseShortCircuitAccessResponseProto.newBuilder()
              .setStatus(Status.SUCCESS)
              .setError(EXT_ADVERTISEMENT)
              .build(),
          start);
    }
    ReleaseShortCircuitAccessResponseProto resp = release(req, pid);
    return Replies.of(OpKind.RELEASE_FDS, resp.getStatus(), resp, start)
        .onDone(
            ok ->
                accounting.slotReleaseDone(
                    slot.getShmId().getHi(), slot.getShmId().getLo(), slot.getSlotIdx(), ok));
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

  /**
   * Whether a release names the HELLO slot: segment id {@code "scr-shim"}/{@code "hello/1\0"} in
   * ASCII, index 0, which no DataNode registers. The client asks for the extensions this way
   * because a stock DataNode answers it as any release of an unknown segment (ERROR_INVALID, one
   * client-trace line), where an unknown op makes it log an error with a stack trace; so does this
   * shim with its extensions off.
   */
  static boolean isHello(ShortCircuitShmSlotProto slot) {
    return slot.getShmId().getHi() == HELLO_SHM_HI
        && slot.getShmId().getLo() == HELLO_SHM_LO
        && slot.getSlotIdx() == 0;
  }

  // ---- op 127: scr extensions -----------------------------------------------------------------

  private Reply.Builder extension(byte[] body, int pid, long start)
      throws InvalidProtocolBufferException {
    if (body.length == 0) {
      throw new InvalidProtocolBufferException("empty scr extension request");
    }
    int sub = body[0];
    ByteArrayInputStream in = new ByteArrayInputStream(body, 1, body.length - 1);
    switch (sub) {
      case EXT_HELLO:
        return Replies.blockOp(OpKind.EXT_HELLO, Status.SUCCESS, EXT_ADVERTISEMENT, start);
      case EXT_PING:
        if (body.length != 1) {
          throw new InvalidProtocolBufferException("a liveness probe has no body");
        }
        return Replies.blockOp(OpKind.EXT_PING, Status.SUCCESS, null, start);
      case EXT_BATCH_RELEASE:
        return batchRelease(in, pid, start);
      case EXT_BATCH_FDS:
        return batchFds(in, pid, start);
      case EXT_REPLICA_STATE:
        return replicaState(in, pid, start);
      default:
        throw new InvalidProtocolBufferException("unknown scr extension " + sub);
    }
  }

  /** One REPLICA_STATE request: a delimited op-87 request naming the block (and its token). */
  private Reply.Builder replicaState(ByteArrayInputStream in, int pid, long start)
      throws InvalidProtocolBufferException {
    OpRequestShortCircuitAccessProto req =
        parseDelimited(OpRequestShortCircuitAccessProto.parser(), in);
    if (in.available() > 0) {
      throw new InvalidProtocolBufferException("one block per replica state request");
    }
    org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto resp =
        fds.replicaState(req, pid);
    return Replies.of(OpKind.EXT_REPLICA_STATE, resp.getStatus(), resp, start);
  }

  private Reply.Builder batchRelease(ByteArrayInputStream in, int pid, long start)
      throws InvalidProtocolBufferException {
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
      Replies.writeDelimited(resp, out);
      n++;
    }
    if (n == 0) {
      throw new InvalidProtocolBufferException("empty batch");
    }
    return Reply.builder(OpKind.EXT_BATCH_RELEASE, Status.SUCCESS, out.toByteArray(), start);
  }

  /**
   * Batched REQUEST_SHORT_CIRCUIT_FDS: one BlockOpResponseProto per request, in order, then one
   * sendmsg with the (data, meta) fds of every SUCCESS in order and one byte; a receipt byte is
   * awaited if any request asked for it. Token failures are per item (the connection stays).
   */
  private Reply.Builder batchFds(ByteArrayInputStream in, int pid, long start)
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
      FdGrants.FdGrant g = fds.grant(req, pid);
      Replies.writeDelimited(g.response, out);
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
    Reply.Builder r = Reply.builder(OpKind.EXT_BATCH_FDS, Status.SUCCESS, out.toByteArray(), start);
    if (!streams.isEmpty()) {
      r.passStreams(streams, releases, (byte) (receipt ? 1 : 0)).awaitReceipt(receipt);
      if (!undos.isEmpty()) {
        r.onFailure(() -> undos.forEach(Runnable::run));
      }
      r.onDone(
          ok -> {
            for (ExtendedBlock b : granted) {
              accounting.fdRequestDone(b, ok, start);
            }
          });
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
}
