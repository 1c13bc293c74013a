package io.scr.core.internal.net;

import io.scr.core.ScrKeys;
import io.scr.core.internal.protocol.ProtocolException;
import io.scr.core.internal.protocol.ShortCircuitProtocol;
import io.scr.core.stats.FailureClass;
import io.scr.shm.SlotId;
import java.io.FileDescriptor;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;

/**
 * The client side of the three short-circuit exchanges, on connections of a {@link
 * DomainSocketPool}: what to send, what to read, in which order, and what each DataNode answer
 * means (facts §2.1, §2.2, §3.2). Stateless and thread-safe; every call is bounded by the
 * connection's timeouts.
 */
public final class ShortCircuitExchanges {
  private ShortCircuitExchanges() {}

  /**
   * Op 87 on a pooled connection: the block's data and meta fds, with {@code slot} registered when
   * not null. Sends the receipt byte when the DataNode asks for it.
   *
   * @param fdsOut receives {data, meta}; the caller owns and closes them
   * @throws InvalidToken for ERROR_ACCESS_TOKEN (refetch the token; no backoff)
   * @throws ShortCircuitRefusedException for any other error status; the connection stays pooled
   *     ({@link ShortCircuitRefusedException#replicaAbsent()} says whether the DataNode holds no
   *     such replica)
   * @throws DomainConnectException if the socket cannot be reached
   * @throws IOException on I/O or protocol failure
   */
  public static void requestFds(
      DomainSocketPool pool,
      String path,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      SlotId slot,
      FileDescriptor[] fdsOut)
      throws IOException {
    requestFds(pool, path, block, token, slot, fdsOut, 0);
  }

  /**
   * As {@link #requestFds(DomainSocketPool, String, ExtendedBlock, Token, SlotId,
   * FileDescriptor[])}, with the connect and each read and write bounded by {@code deadlineMs} (the
   * DataNode's health deadline; 0: the pool's timeouts alone).
   *
   * @throws java.net.SocketTimeoutException when the DataNode did not answer within it
   */
  public static void requestFds(
      DomainSocketPool pool,
      String path,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      SlotId slot,
      FileDescriptor[] fdsOut,
      int deadlineMs)
      throws IOException {
    byte[] request = ShortCircuitProtocol.encodeRequestFds(block, token, slot);
    IOException refused =
        pool.call(
            path,
            deadlineMs,
            c -> {
              c.send(request);
              BlockOpResponseProto resp = ShortCircuitProtocol.readFdResponse(c.in());
              if (resp.getStatus() != Status.SUCCESS) {
                // Returned, not thrown: an answer leaves the connection usable (the DataNode
                // reads the next op on it), so it goes back to the pool instead of being closed
                // and redialled. ERROR_ACCESS_TOKEN marks it not reusable (the DataNode closes).
                return refusal(c, path, block, resp);
              }
              int b = c.receiveFds(fdsOut, 2);
              if (b == ShortCircuitProtocol.USE_RECEIPT_VERIFICATION) {
                try {
                  c.sendByte(0);
                } catch (IOException e) {
                  // Without the receipt the DataNode unregisters the slot: the fds must not be
                  // used.
                  DomainConnection.closeAll(fdsOut);
                  fdsOut[0] = null;
                  fdsOut[1] = null;
                  throw e;
                }
              }
              return null;
            });
    if (refused != null) {
      throw refused;
    }
  }

  /**
   * Most fd requests in one op-127 BATCH_FDS frame: their 2 fds each arrive in one control message,
   * which must fit the connection's ancillary buffer (512 bytes: 64 fds take 272).
   */
  public static final int MAX_BLOCKS_PER_BATCH_FDS = 32;

  /**
   * One block's answer in a batched fd request: its two fds (the caller owns and closes them), or
   * the refusal, exactly one of the two. Immutable.
   */
  public static final class BatchedFds {
    private final FileDescriptor data;
    private final FileDescriptor meta;
    private final IOException refusal;

    BatchedFds(FileDescriptor data, FileDescriptor meta, IOException refusal) {
      this.data = data;
      this.meta = meta;
      this.refusal = refusal;
    }

    /** The block file's fd, or null when refused. */
    public FileDescriptor data() {
      return data;
    }

    /** The meta file's fd, or null when refused. */
    public FileDescriptor meta() {
      return meta;
    }

    /**
     * Why the peer refused this block, as {@link #requestFds} would have thrown it ({@link
     * ShortCircuitRefusedException}, or {@link InvalidToken}); null when granted.
     */
    public IOException refusal() {
      return refusal;
    }
  }

  /**
   * Op 127 BATCH_FDS on one pooled connection: op 87 for every block of the list in one frame and
   * one answer, the fds of every granted block in one message; sends the receipt byte. Only for a
   * peer that advertised {@code batch-fds} ({@link PeerExtensions}); at most {@link
   * #MAX_BLOCKS_PER_BATCH_FDS} blocks. A refused block does not fail the others (nor the
   * connection, apart from a token refusal, after which the connection is not pooled again).
   *
   * @param slots the slot to register per block (elements may be null), or null for none
   * @return one answer per block, in order; the caller owns every fd in them
   * @throws DomainConnectException if the socket cannot be reached
   * @throws IOException on I/O or protocol failure, e.g. the peer closed the connection as a stock
   *     DataNode does on op 127; no fd is left open, and any slot it registered is unregistered by
   *     the peer for want of the receipt
   */
  public static List<BatchedFds> requestFdsBatched(
      DomainSocketPool pool,
      String path,
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      List<SlotId> slots)
      throws IOException {
    return requestFdsBatched(pool, path, blocks, tokens, slots, 0);
  }

  /**
   * As {@link #requestFdsBatched(DomainSocketPool, String, List, List, List)}, with the connect and
   * each read and write bounded by {@code deadlineMs} (0: the pool's timeouts alone).
   */
  public static List<BatchedFds> requestFdsBatched(
      DomainSocketPool pool,
      String path,
      List<ExtendedBlock> blocks,
      List<Token<BlockTokenIdentifier>> tokens,
      List<SlotId> slots,
      int deadlineMs)
      throws IOException {
    if (blocks.size() > MAX_BLOCKS_PER_BATCH_FDS) {
      throw new IllegalArgumentException(
          blocks.size() + " blocks in one batch; at most " + MAX_BLOCKS_PER_BATCH_FDS);
    }
    byte[] request = ShortCircuitProtocol.encodeBatchRequestFds(blocks, tokens, slots);
    return pool.call(
        path,
        deadlineMs,
        c -> {
          c.send(request);
          BlockOpResponseProto[] answers = new BlockOpResponseProto[blocks.size()];
          int granted = 0;
          for (int i = 0; i < answers.length; i++) {
            answers[i] = ShortCircuitProtocol.readFdResponse(c.in());
            if (answers[i].getStatus() == Status.SUCCESS) {
              granted++;
            }
          }
          FileDescriptor[] fds = new FileDescriptor[2 * granted];
          if (granted > 0) {
            int b = c.receiveFds(fds, fds.length);
            if (b == ShortCircuitProtocol.USE_RECEIPT_VERIFICATION) {
              try {
                c.sendByte(0);
              } catch (IOException e) {
                DomainConnection.closeAll(fds); // the peer unregisters their slots
                throw e;
              }
            }
          }
          List<BatchedFds> out = new ArrayList<>(answers.length);
          int next = 0;
          for (int i = 0; i < answers.length; i++) {
            if (answers[i].getStatus() == Status.SUCCESS) {
              out.add(new BatchedFds(fds[next], fds[next + 1], null));
              next += 2;
            } else {
              out.add(new BatchedFds(null, null, refusal(c, path, blocks.get(i), answers[i])));
            }
          }
          return out;
        });
  }

  /**
   * Messages with which a DataNode says it holds no such replica: stock 3.4's {@code
   * FsDatasetImpl.getBlockInputStream} ("No data exists for block", also for a generation stamp
   * mismatch), {@code ReplicaNotFoundException} ("Replica not found for", "Replica does not exist")
   * and the scr shim (which uses the same texts).
   */
  private static final String[] ABSENT_REPLICA_MESSAGES = {
    "No data exists for block", "Replica not found for", "Replica does not exist"
  };

  static boolean isAbsentReplicaMessage(String message) {
    if (message == null) {
      return false;
    }
    for (String m : ABSENT_REPLICA_MESSAGES) {
      if (message.startsWith(m)) {
        return true;
      }
    }
    return false;
  }

  private static IOException refusal(
      DomainConnection c, String path, ExtendedBlock block, BlockOpResponseProto resp) {
    String message = resp.hasMessage() ? resp.getMessage() : "(no message)";
    switch (resp.getStatus()) {
      case ERROR_ACCESS_TOKEN:
        // The DataNode closes the connection after this status.
        c.markNotReusable();
        return new InvalidToken(
            "DataNode at " + path + " rejected the block token for " + block + ": " + message);
      case ERROR_UNSUPPORTED:
        if (resp.hasShortCircuitAccessVersion()) {
          return new ShortCircuitRefusedException(
              "DataNode at "
                  + path
                  + " refused short-circuit access version for "
                  + block
                  + ": "
                  + message,
              resp.getStatus().name(),
              null);
        }
        return new ShortCircuitRefusedException(
            "DataNode at "
                + path
                + " does not pass file descriptors: "
                + message
                + " (check "
                + ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name()
                + " and libhadoop on the DataNode, or use the"
                + " scr shim)",
            resp.getStatus().name(),
            FailureClass.UNSUPPORTED);
      default:
        return new ShortCircuitRefusedException(
            "DataNode at "
                + path
                + " cannot serve "
                + block
                + " locally: "
                + resp.getStatus()
                + " "
                + message,
            resp.getStatus().name(),
            null,
            resp.getStatus() == Status.ERROR
                && resp.hasMessage()
                && isAbsentReplicaMessage(resp.getMessage()));
    }
  }

  /**
   * Op 88 for each slot, one after another on one pooled connection (the stock DataNode accepts one
   * slot per request).
   *
   * @throws IOException if any release failed; the slots before it were released
   */
  public static void releaseSlots(DomainSocketPool pool, String path, List<SlotId> slots)
      throws IOException {
    pool.call(
        path,
        c -> {
          for (SlotId slot : slots) {
            c.send(ShortCircuitProtocol.encodeReleaseFds(slot));
            ReleaseShortCircuitAccessResponseProto resp =
                ShortCircuitProtocol.readReleaseResponse(c.in());
            if (resp.getStatus() != Status.SUCCESS) {
              throw new IOException(
                  "DataNode at "
                      + path
                      + " failed to release slot "
                      + slot
                      + ": "
                      + resp.getStatus()
                      + " "
                      + (resp.hasError() ? resp.getError() : ""));
            }
          }
          return null;
        });
  }

  /** Most slots in one op-127 BATCH_RELEASE frame (about 30 bytes each; the shim takes 64 KiB). */
  public static final int MAX_SLOTS_PER_BATCH_RELEASE = 512;

  /**
   * Op 127 BATCH_RELEASE on one pooled connection: every slot of {@code slots}, in frames of at
   * most {@link #MAX_SLOTS_PER_BATCH_RELEASE}, each frame one round trip. Only for a peer that
   * advertised {@code batch-release} ({@link PeerExtensions}). Every response of a frame is read
   * before a failure is reported, so the connection stays usable.
   *
   * @return the number of frames sent (round trips)
   * @throws IOException if the peer refused a slot (the slots it accepted are released), or on I/O
   *     or protocol failure
   */
  public static int releaseSlotsBatched(DomainSocketPool pool, String path, List<SlotId> slots)
      throws IOException {
    return pool.call(
        path,
        c -> {
          int frames = 0;
          String failure = null;
          for (int from = 0; from < slots.size(); from += MAX_SLOTS_PER_BATCH_RELEASE) {
            int to = Math.min(slots.size(), from + MAX_SLOTS_PER_BATCH_RELEASE);
            c.send(ShortCircuitProtocol.encodeBatchRelease(slots, from, to));
            frames++;
            for (int i = from; i < to; i++) {
              ReleaseShortCircuitAccessResponseProto resp =
                  ShortCircuitProtocol.readReleaseResponse(c.in());
              if (resp.getStatus() != Status.SUCCESS && failure == null) {
                failure =
                    "DataNode at "
                        + path
                        + " failed to release slot "
                        + slots.get(i)
                        + " (batched): "
                        + resp.getStatus()
                        + " "
                        + (resp.hasError() ? resp.getError() : "");
              }
            }
          }
          if (failure != null) {
            throw new IOException(failure);
          }
          return frames;
        });
  }

  /**
   * HELLO on a new connection ({@link ShortCircuitProtocol#encodeHello}, a release of a slot no
   * DataNode registers): the peer's extension advertisement (e.g. {@code "scr-shim-extensions/1
   * batch-fds batch-release"}), or null when the peer is a stock DataNode (it answers the release
   * with an error, and logs it no louder than any release) or closed the connection. A shim's
   * connection goes back to the pool.
   *
   * @throws DomainConnectException if the socket cannot be reached (the peer is unknown)
   * @throws java.net.SocketTimeoutException if the peer did not answer in time (unknown too)
   * @throws ProtocolException if the peer answered with bytes that are no response
   */
  public static String probeExtensions(DomainSocketPool pool, String path) throws IOException {
    try {
      return pool.callOnNewConnection(
          path,
          c -> {
            c.send(ShortCircuitProtocol.encodeHello());
            ReleaseShortCircuitAccessResponseProto resp =
                ShortCircuitProtocol.readReleaseResponse(c.in());
            if (resp.getStatus() != Status.SUCCESS || !resp.hasError()) {
              c.markNotReusable();
              return null;
            }
            return resp.getError();
          });
    } catch (DomainConnectException | java.net.SocketTimeoutException | ProtocolException e) {
      throw e;
    } catch (IOException e) {
      return null; // EOF or reset: a peer that drops the connection is no shim
    }
  }

  /**
   * Op 127 REPLICA_STATE on a pooled connection: what the DataNode's memory says of its replica of
   * {@code block} (one round trip, no fds). Only for a peer that advertised {@code replica-state}
   * ({@link PeerExtensions}).
   *
   * @throws InvalidToken for ERROR_ACCESS_TOKEN
   * @throws ShortCircuitRefusedException for any other error status (e.g. no such replica)
   * @throws IOException on I/O or protocol failure, e.g. the peer closed the connection as a stock
   *     DataNode does on op 127
   */
  public static io.scr.core.internal.read.TailSnapshot replicaState(
      DomainSocketPool pool,
      String path,
      int deadlineMs,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token)
      throws IOException {
    byte[] request = ShortCircuitProtocol.encodeReplicaState(block, token);
    Object answer =
        pool.call(
            path,
            deadlineMs,
            c -> {
              c.send(request);
              BlockOpResponseProto resp = ShortCircuitProtocol.readFdResponse(c.in());
              if (resp.getStatus() != Status.SUCCESS) {
                return refusal(c, path, block, resp);
              }
              return ShortCircuitProtocol.parseReplicaState(resp.getMessage());
            });
    if (answer instanceof IOException) {
      throw (IOException) answer;
    }
    return (io.scr.core.internal.read.TailSnapshot) answer;
  }

  /** A new shared-memory segment's fd and id; the connection is the segment's from now on. */
  public static final class ShmGrant {
    private final DomainConnection connection;
    private final ShortCircuitShmResponseProto response;
    private final FileDescriptor fd;

    ShmGrant(
        DomainConnection connection, ShortCircuitShmResponseProto response, FileDescriptor fd) {
      this.connection = connection;
      this.response = response;
      this.fd = fd;
    }

    /** The connection the DataNode ties the segment to: never write to it; closing frees it. */
    public DomainConnection connection() {
      return connection;
    }

    /** The segment id. */
    public io.scr.shm.ShmId shmId() {
      return ShortCircuitProtocol.fromProto(response.getId());
    }

    /** The segment's fd; the caller owns and closes it (after mapping). */
    public FileDescriptor fd() {
      return fd;
    }
  }

  /**
   * Op 89 on a fresh connection that becomes the segment's (facts §3.1).
   *
   * @throws ShortCircuitRefusedException when the DataNode refuses ({@link FailureClass#SHM})
   * @throws IOException on I/O or protocol failure; the connection is closed
   */
  public static ShmGrant requestShm(DomainSocketPool pool, String path, String clientName)
      throws IOException {
    DomainConnection c = pool.connect(path);
    try {
      c.send(ShortCircuitProtocol.encodeRequestShm(clientName));
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
    try {
      return requestShm(c, path);
    } catch (java.net.SocketTimeoutException e) {
      // A segment request is the first exchange with a DataNode: its health hears of the hang.
      pool.timedOut(path, "no answer to a shared-memory request: " + e.getMessage());
      throw e;
    }
  }

  /** Reads the answer to op 89 on {@code c}; closes {@code c} unless a segment was granted. */
  private static ShmGrant requestShm(DomainConnection c, String path) throws IOException {
    boolean ok = false;
    try {
      ShortCircuitShmResponseProto resp = ShortCircuitProtocol.readShmResponse(c.in());
      if (resp.getStatus() != Status.SUCCESS) {
        throw new ShortCircuitRefusedException(
            "DataNode at "
                + path
                + " refused a shared-memory segment: "
                + resp.getStatus()
                + " "
                + (resp.hasError() ? resp.getError() : ""),
            resp.getStatus().name(),
            FailureClass.SHM);
      }
      if (!resp.hasId()) {
        throw new ProtocolException("DataNode at " + path + " granted a segment without an id");
      }
      FileDescriptor[] fds = new FileDescriptor[1];
      c.receiveFds(fds, 1);
      ok = true;
      return new ShmGrant(c, resp, fds[0]);
    } finally {
      if (!ok) {
        c.close();
      }
    }
  }
}
