package io.scr.shim;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;

/** Encodes responses as a stock DataNode writes them: varint-delimited protobuf. Stateless. */
final class Replies {
  private Replies() {}

  /** A reply whose bytes are {@code msg}, delimited. */
  static Reply.Builder of(ShimMetrics.OpKind kind, Status status, MessageLite msg, long start) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(msg.getSerializedSize() + 5);
    writeDelimited(msg, out);
    return Reply.builder(kind, status, out.toByteArray(), start);
  }

  /** A reply of one {@link BlockOpResponseProto} with {@code status} and {@code message}. */
  static Reply.Builder blockOp(ShimMetrics.OpKind kind, Status status, String message, long start) {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder().setStatus(status);
    if (message != null) {
      b.setMessage(message);
    }
    return of(kind, status, b.build(), start);
  }

  static void writeDelimited(MessageLite msg, ByteArrayOutputStream out) {
    try {
      msg.writeDelimitedTo(out);
    } catch (IOException e) {
      throw new IllegalStateException("cannot happen: in-memory stream", e);
    }
  }
}
