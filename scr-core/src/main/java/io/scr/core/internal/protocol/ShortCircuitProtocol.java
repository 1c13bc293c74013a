package io.scr.core.internal.protocol;

import io.scr.shm.ShmId;
import io.scr.shm.SlotId;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.CodedOutputStream;
import org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;
import org.apache.hadoop.thirdparty.protobuf.Parser;

/**
 * Encodes and decodes the three short-circuit operations of HDFS's DataTransferProtocol exactly as
 * the stock client ({@code Sender}) and DataNode ({@code DataXceiver}) do, using Hadoop's generated
 * {@code DataTransferProtos}:
 *
 * <pre>
 * request  = version (short BE, 28) | op (1 byte: 87, 88 or 89) | varint32 length | message
 * response = varint32 length | message        (no version, no op)
 * </pre>
 *
 * <p>Requests are encoded into one byte array and written with a single {@code write}, so a request
 * is one system call. Responses are read exactly: the varint byte by byte, then exactly the
 * message's bytes, never further. That matters on UNIX sockets, where the fd-carrying byte follows
 * a successful op 87 or 89 response and must be received separately (with its {@code SCM_RIGHTS}
 * control message), not swallowed by a buffered read.
 *
 * <p>Both sides use this class: the scr client, and the DataNode shim (which decodes requests and
 * encodes responses). Stateless and thread-safe.
 */
public final class ShortCircuitProtocol {
  /** {@code DataTransferProtocol.DATA_TRANSFER_VERSION}. */
  public static final int DATA_TRANSFER_VERSION = 28;

  /** REQUEST_SHORT_CIRCUIT_FDS. */
  public static final int OP_REQUEST_SHORT_CIRCUIT_FDS = 87;

  /** RELEASE_SHORT_CIRCUIT_FDS. */
  public static final int OP_RELEASE_SHORT_CIRCUIT_FDS = 88;

  /** REQUEST_SHORT_CIRCUIT_SHM. */
  public static final int OP_REQUEST_SHORT_CIRCUIT_SHM = 89;

  /**
   * Op.CUSTOM, which carries the scr shim's extensions. A stock DataNode answers it by closing the
   * connection ("Unknown op"); a stock client never sends it.
   */
  public static final int OP_SCR_EXTENSION = 127;

  /** Extension sub-op (first body byte): HELLO, answered with the features the peer offers. */
  public static final int EXT_HELLO = 1;

  /** Extension sub-op: several op-88 requests in one frame, one response each, in order. */
  public static final int EXT_BATCH_RELEASE = 2;

  /** Extension sub-op: several op-87 requests in one frame, their fds in one message. */
  public static final int EXT_BATCH_FDS = 3;

  /**
   * Extension sub-op: the DataNode's in-memory state of one replica (generation stamp, visible
   * length, bytes on disk, last partial checksum), for reading a block being written.
   */
  public static final int EXT_REPLICA_STATE = 5;

  /**
   * Extension sub-op: PING, answered {@code SUCCESS} by the shim's event loop without touching the
   * dataset (a liveness probe).
   */
  public static final int EXT_PING = 4;

  /** How the HELLO answer's message starts when the peer speaks version 1 of the extensions. */
  public static final String EXTENSIONS_V1 = "scr-shim-extensions/1";

  /** Feature word of the HELLO answer: batched releases. */
  public static final String FEATURE_BATCH_RELEASE = "batch-release";

  /** Feature word of the HELLO answer: batched fd requests. */
  public static final String FEATURE_BATCH_FDS = "batch-fds";

  /** Feature word of the HELLO answer: the replica state request ({@link #EXT_REPLICA_STATE}). */
  public static final String FEATURE_REPLICA_STATE = "replica-state";

  /** Feature word of the HELLO answer: the liveness PING. */
  public static final String FEATURE_PING = "ping";

  /** The short-circuit access version the stock client sends and the stock DataNode answers. */
  public static final int SHORT_CIRCUIT_ACCESS_VERSION = 1;

  /** The data byte that comes with the fds when the DataNode waits for a receipt. */
  public static final int USE_RECEIPT_VERIFICATION = 1;

  /** Largest delimited message accepted when decoding (a defence against hostile lengths). */
  public static final int MAX_MESSAGE_BYTES = 64 * 1024;

  private ShortCircuitProtocol() {}

  /**
   * Op 87: asks for the block's data and meta fds, registering {@code slot} if not null; the
   * receipt byte is always offered, as the stock client does.
   */
  public static byte[] encodeRequestFds(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, SlotId slot) {
    return frame(OP_REQUEST_SHORT_CIRCUIT_FDS, requestFdsProto(block, token, slot));
  }

  private static OpRequestShortCircuitAccessProto requestFdsProto(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, SlotId slot) {
    OpRequestShortCircuitAccessProto.Builder b =
        OpRequestShortCircuitAccessProto.newBuilder()
            .setHeader(
                BaseHeaderProto.newBuilder()
                    .setBlock(PBHelperClient.convert(block))
                    .setToken(PBHelperClient.convert(token)))
            .setMaxVersion(SHORT_CIRCUIT_ACCESS_VERSION);
    if (slot != null) {
      b.setSlotId(toProto(slot));
    }
    b.setSupportsReceiptVerification(true);
    return b.build();
  }

  /**
   * Op 127 BATCH_FDS: one op-87 request per block in one frame (each as {@link #encodeRequestFds}
   * would send it, receipt offered); the peer answers with one delimited {@code
   * BlockOpResponseProto} per request, in order, then, if any succeeded, one message carrying the
   * (data, meta) fds of every success in order, whose data byte asks for one receipt byte.
   *
   * @param slots the slot to register per block (an element may be null), or null for none
   */
  public static byte[] encodeBatchRequestFds(
      List<ExtendedBlock> blocks, List<Token<BlockTokenIdentifier>> tokens, List<SlotId> slots) {
    if (blocks.isEmpty() || tokens.size() != blocks.size()) {
      throw new IllegalArgumentException(
          "a batch needs one token per block: " + blocks.size() + " blocks, " + tokens.size());
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream(1 + 160 * blocks.size());
    body.write(EXT_BATCH_FDS);
    try {
      for (int i = 0; i < blocks.size(); i++) {
        requestFdsProto(blocks.get(i), tokens.get(i), slots == null ? null : slots.get(i))
            .writeDelimitedTo(body);
      }
    } catch (IOException e) {
      throw new IllegalStateException("writing to a byte array cannot fail", e);
    }
    return extensionFrame(body);
  }

  private static byte[] extensionFrame(ByteArrayOutputStream body) {
    int length = body.size();
    ByteArrayOutputStream frame =
        new ByteArrayOutputStream(3 + CodedOutputStream.computeUInt32SizeNoTag(length) + length);
    frame.write(0);
    frame.write(DATA_TRANSFER_VERSION);
    frame.write(OP_SCR_EXTENSION);
    int v = length;
    while ((v & ~0x7f) != 0) {
      frame.write((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    frame.write(v);
    frame.write(body.toByteArray(), 0, length);
    return frame.toByteArray();
  }

  /**
   * Op 127 REPLICA_STATE: the block (with its token) as one delimited op-87 request without a slot;
   * the peer answers with one delimited {@code BlockOpResponseProto} whose SUCCESS message {@link
   * #parseReplicaState} reads.
   */
  public static byte[] encodeReplicaState(ExtendedBlock block, Token<BlockTokenIdentifier> token) {
    ByteArrayOutputStream body = new ByteArrayOutputStream(160);
    body.write(EXT_REPLICA_STATE);
    try {
      OpRequestShortCircuitAccessProto.newBuilder()
          .setHeader(
              BaseHeaderProto.newBuilder()
                  .setBlock(PBHelperClient.convert(block))
                  .setToken(PBHelperClient.convert(token)))
          .setMaxVersion(SHORT_CIRCUIT_ACCESS_VERSION)
          .build()
          .writeDelimitedTo(body);
    } catch (IOException e) {
      throw new IllegalStateException("writing to a byte array cannot fail", e);
    }
    return extensionFrame(body);
  }

  /**
   * The replica state of a REPLICA_STATE answer's message, {@code gs=<n> state=<name> visible=<n>
   * ondisk=<n> sum=<hex|->} (words in any order; unknown words are ignored, so a later shim may add
   * some).
   *
   * @throws ProtocolException if a required word is missing or malformed
   */
  public static io.scr.core.internal.read.TailSnapshot parseReplicaState(String message)
      throws ProtocolException {
    long gs = -1;
    long visible = Long.MIN_VALUE;
    long onDisk = -1;
    String state = null;
    byte[] sum = null;
    try {
      for (String word : message.trim().split("\\s+")) {
        int eq = word.indexOf('=');
        if (eq <= 0) {
          continue;
        }
        String key = word.substring(0, eq);
        String value = word.substring(eq + 1);
        switch (key) {
          case "gs":
            gs = Long.parseLong(value);
            break;
          case "state":
            state = value;
            break;
          case "visible":
            visible = Long.parseLong(value);
            break;
          case "ondisk":
            onDisk = Long.parseLong(value);
            break;
          case "sum":
            if (!"-".equals(value)) {
              if (value.length() % 2 != 0) {
                throw new NumberFormatException("odd hex length: " + value);
              }
              sum = new byte[value.length() / 2];
              for (int i = 0; i < sum.length; i++) {
                sum[i] = (byte) Integer.parseInt(value.substring(2 * i, 2 * i + 2), 16);
              }
            }
            break;
          default:
            break;
        }
      }
    } catch (NumberFormatException e) {
      throw new ProtocolException("malformed replica state \"" + message + "\": " + e.getMessage());
    }
    if (gs < 0 || state == null || visible == Long.MIN_VALUE || onDisk < 0) {
      throw new ProtocolException("incomplete replica state \"" + message + "\"");
    }
    boolean beingWritten = !"FINALIZED".equals(state);
    return new io.scr.core.internal.read.TailSnapshot(gs, beingWritten, visible, onDisk, sum);
  }

  /** Op 88: releases one slot. */
  public static byte[] encodeReleaseFds(SlotId slot) {
    return frame(
        OP_RELEASE_SHORT_CIRCUIT_FDS,
        ReleaseShortCircuitAccessRequestProto.newBuilder().setSlotId(toProto(slot)).build());
  }

  /**
   * The slot a HELLO names: segment id {@code "scr-shim"}/{@code "hello/1\0"} in ASCII, index 0. No
   * DataNode registers it (segment ids are random), so a stock DataNode answers its release
   * ERROR_INVALID ("no such segment") and logs no more than for any release, where the op-127 HELLO
   * made it log an error with a stack trace ("DataXceiver error processing unknown operation").
   */
  public static final SlotId HELLO_SLOT =
      SlotId.of(ShmId.of(0x7363722d7368696dL, 0x68656c6c6f2f3100L), 0);

  /**
   * HELLO: asks which extensions the peer offers, as a RELEASE_SHORT_CIRCUIT_FDS (op 88) of {@link
   * #HELLO_SLOT}. The scr shim answers SUCCESS with its advertisement in the response's {@code
   * error} field ({@link #EXTENSIONS_V1} and feature words); a stock DataNode (or a shim with its
   * extensions off) answers ERROR_INVALID.
   */
  public static byte[] encodeHello() {
    return encodeReleaseFds(HELLO_SLOT);
  }

  /**
   * Op 127 HELLO, the earlier form of {@link #encodeHello} (answered by a BlockOpResponseProto);
   * the shim still answers it. Never sent to a DataNode not known to be a shim: a stock DataNode
   * logs an error with a stack trace for it.
   */
  public static byte[] encodeExtensionHello() {
    return new byte[] {0, (byte) DATA_TRANSFER_VERSION, (byte) OP_SCR_EXTENSION, 1, EXT_HELLO};
  }

  /** Op 127 PING: {@code 00 1C 7F 01 04}, answered by a {@code BlockOpResponseProto}. */
  public static byte[] encodePing() {
    return new byte[] {0, (byte) DATA_TRANSFER_VERSION, (byte) OP_SCR_EXTENSION, 1, EXT_PING};
  }

  /**
   * Op 127 BATCH_RELEASE: one op-88 request per slot of {@code slots[from, to)} in one frame; the
   * peer answers with one delimited {@code ReleaseShortCircuitAccessResponseProto} per slot, in
   * order.
   */
  public static byte[] encodeBatchRelease(List<SlotId> slots, int from, int to) {
    if (from < 0 || to > slots.size() || from >= to) {
      throw new IllegalArgumentException(
          "empty or out of range batch [" + from + ", " + to + ") of " + slots.size());
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream(1 + 32 * (to - from));
    body.write(EXT_BATCH_RELEASE);
    try {
      for (int i = from; i < to; i++) {
        ReleaseShortCircuitAccessRequestProto.newBuilder()
            .setSlotId(toProto(slots.get(i)))
            .build()
            .writeDelimitedTo(body);
      }
    } catch (IOException e) {
      throw new IllegalStateException("writing to a byte array cannot fail", e);
    }
    return extensionFrame(body);
  }

  /** Op 89: asks for a new shared-memory segment; {@code clientName} only names it on the DN. */
  public static byte[] encodeRequestShm(String clientName) {
    return frame(
        OP_REQUEST_SHORT_CIRCUIT_SHM,
        ShortCircuitShmRequestProto.newBuilder().setClientName(clientName).build());
  }

  /** The wire form of a slot id. */
  public static ShortCircuitShmSlotProto toProto(SlotId slot) {
    return ShortCircuitShmSlotProto.newBuilder()
        .setShmId(toProto(slot.shmId()))
        .setSlotIdx(slot.index())
        .build();
  }

  /** The wire form of a segment id. */
  public static ShortCircuitShmIdProto toProto(ShmId id) {
    return ShortCircuitShmIdProto.newBuilder().setHi(id.hi()).setLo(id.lo()).build();
  }

  /** A segment id from the wire. */
  public static ShmId fromProto(ShortCircuitShmIdProto id) {
    return ShmId.of(id.getHi(), id.getLo());
  }

  /** A slot id from the wire. */
  public static SlotId fromProto(ShortCircuitShmSlotProto slot) {
    return SlotId.of(fromProto(slot.getShmId()), slot.getSlotIdx());
  }

  /** Reads the response to op 87 (exactly its bytes). */
  public static BlockOpResponseProto readFdResponse(InputStream in) throws IOException {
    return readDelimited(in, BlockOpResponseProto.parser());
  }

  /** Reads the response to op 88 (exactly its bytes). */
  public static ReleaseShortCircuitAccessResponseProto readReleaseResponse(InputStream in)
      throws IOException {
    return readDelimited(in, ReleaseShortCircuitAccessResponseProto.parser());
  }

  /** Reads the response to op 89 (exactly its bytes). */
  public static ShortCircuitShmResponseProto readShmResponse(InputStream in) throws IOException {
    return readDelimited(in, ShortCircuitShmResponseProto.parser());
  }

  /**
   * Server side: reads the version and op of the next request.
   *
   * @return the op code (87, 88, 89 or any other code the peer sent), or -1 at a clean EOF before
   *     the first byte
   * @throws ProtocolException if the version is not 28
   */
  public static int readOpHeader(InputStream in) throws IOException {
    int b0 = in.read();
    if (b0 < 0) {
      return -1;
    }
    int b1 = in.read();
    int op = in.read();
    if (b1 < 0 || op < 0) {
      throw new EOFException("connection closed inside a request header");
    }
    int version = (short) ((b0 << 8) | b1);
    if (version != DATA_TRANSFER_VERSION) {
      throw new ProtocolException(
          "Version Mismatch (Expected: " + DATA_TRANSFER_VERSION + ", Received: " + version + " )");
    }
    return op;
  }

  /** Server side: reads an op 87 body (after {@link #readOpHeader}). */
  public static OpRequestShortCircuitAccessProto readRequestFds(InputStream in) throws IOException {
    return readDelimited(in, OpRequestShortCircuitAccessProto.parser());
  }

  /** Server side: reads an op 88 body (after {@link #readOpHeader}). */
  public static ReleaseShortCircuitAccessRequestProto readReleaseRequest(InputStream in)
      throws IOException {
    return readDelimited(in, ReleaseShortCircuitAccessRequestProto.parser());
  }

  /** Server side: reads an op 89 body (after {@link #readOpHeader}). */
  public static ShortCircuitShmRequestProto readShmRequest(InputStream in) throws IOException {
    return readDelimited(in, ShortCircuitShmRequestProto.parser());
  }

  /** Server side: a response message, varint-delimited, as {@code writeDelimitedTo} does. */
  public static byte[] encodeResponse(MessageLite response) {
    return delimited(response, 0, null);
  }

  /** Server side: an op 87 success response ({@code SUCCESS}, access version 1). */
  public static byte[] encodeFdSuccess() {
    return encodeResponse(
        BlockOpResponseProto.newBuilder()
            .setStatus(Status.SUCCESS)
            .setShortCircuitAccessVersion(SHORT_CIRCUIT_ACCESS_VERSION)
            .build());
  }

  /**
   * Reads one varint32-delimited message, consuming exactly its bytes.
   *
   * @throws EOFException when the stream ends before or inside the message
   * @throws ProtocolException when the length is malformed or above {@link #MAX_MESSAGE_BYTES}, or
   *     the bytes do not parse
   */
  public static <T> T readDelimited(InputStream in, Parser<T> parser) throws IOException {
    int first = in.read();
    if (first < 0) {
      throw new EOFException("connection closed before the response");
    }
    int length = readVarint32(first, in);
    if (length < 0 || length > MAX_MESSAGE_BYTES) {
      throw new ProtocolException(
          "message length " + length + " is outside 0.." + MAX_MESSAGE_BYTES);
    }
    byte[] body = new byte[length];
    new DataInputStream(in).readFully(body);
    try {
      return parser.parseFrom(body);
    } catch (InvalidProtocolBufferException e) {
      throw new ProtocolException("malformed message: " + e.getMessage(), e);
    }
  }

  private static int readVarint32(int first, InputStream in) throws IOException {
    if ((first & 0x80) == 0) {
      return first;
    }
    int result = first & 0x7f;
    for (int shift = 7; shift < 35; shift += 7) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("connection closed inside a message length");
      }
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw new ProtocolException("malformed varint32 message length");
  }

  /** Writes {@code frame} with one call and flushes. */
  public static void writeFrame(OutputStream out, byte[] frame) throws IOException {
    out.write(frame);
    out.flush();
  }

  private static byte[] frame(int op, MessageLite message) {
    return delimited(message, 3, new byte[] {0, (byte) DATA_TRANSFER_VERSION, (byte) op});
  }

  private static byte[] delimited(MessageLite message, int prefixLength, byte[] prefix) {
    int size = message.getSerializedSize();
    ByteArrayOutputStream bytes =
        new ByteArrayOutputStream(
            prefixLength + CodedOutputStream.computeUInt32SizeNoTag(size) + size);
    try {
      if (prefix != null) {
        bytes.write(prefix);
      }
      message.writeDelimitedTo(bytes);
    } catch (IOException e) {
      throw new IllegalStateException("writing to a byte array cannot fail", e);
    }
    return bytes.toByteArray();
  }
}
