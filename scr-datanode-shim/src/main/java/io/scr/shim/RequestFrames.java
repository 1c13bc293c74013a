package io.scr.shim;

import io.netty.buffer.ByteBuf;

/**
 * Reads the header of a DataTransferProtocol request frame ({@code [version 28 as short][op][varint
 * length][protobuf]}) from a connection's cumulation buffer without consuming it, as a stock
 * DataNode's {@code Receiver} reads it. Stateless.
 */
final class RequestFrames {
  static final int DATA_TRANSFER_VERSION = 28;

  /** What the buffer holds at its reader index. */
  enum Kind {
    /** Not all of the frame has arrived. */
    INCOMPLETE,
    /** A version other than 28: stock closes the connection. */
    BAD_VERSION,
    /** An op the shim does not serve: stock closes ("Unknown op"). */
    UNKNOWN_OP,
    /** A length varint longer than five bytes. */
    BAD_VARINT,
    /** A body longer than the shim accepts. */
    OVERSIZED,
    /** A whole frame: {@link Header#op}, {@link Header#headerLength} and {@link Header#length}. */
    COMPLETE
  }

  /** One frame's header as read; {@code version} and {@code length} are set as far as read. */
  static final class Header {
    final Kind kind;
    final int version;
    final int op;
    final int headerLength;
    final long length;

    private Header(Kind kind, int version, int op, int headerLength, long length) {
      this.kind = kind;
      this.version = version;
      this.op = op;
      this.headerLength = headerLength;
      this.length = length;
    }
  }

  /** Whether the shim serves an op (the service's answer). */
  interface ServedOps {
    boolean isServedOp(int op);
  }

  private RequestFrames() {}

  /** Reads the frame header at {@code in}'s reader index; consumes nothing. */
  static Header peek(ByteBuf in, ServedOps served, int maxRequestBytes) {
    int start = in.readerIndex();
    int avail = in.readableBytes();
    if (avail < 2) {
      return new Header(Kind.INCOMPLETE, 0, -1, 0, 0);
    }
    int version = in.getShort(start);
    if (version != DATA_TRANSFER_VERSION) {
      return new Header(Kind.BAD_VERSION, version, -1, 0, 0);
    }
    if (avail < 3) {
      return new Header(Kind.INCOMPLETE, version, -1, 0, 0);
    }
    int op = in.getUnsignedByte(start + 2);
    if (!served.isServedOp(op)) {
      return new Header(Kind.UNKNOWN_OP, version, op, 0, 0);
    }
    long length = 0;
    int pos = start + 3;
    int shift = 0;
    while (true) {
      if (pos >= start + avail) {
        return new Header(Kind.INCOMPLETE, version, op, 0, 0); // varint incomplete
      }
      int b = in.getUnsignedByte(pos++);
      length |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        break;
      }
      shift += 7;
      if (shift >= 35) {
        return new Header(Kind.BAD_VARINT, version, op, 0, 0);
      }
    }
    if (length > maxRequestBytes) {
      return new Header(Kind.OVERSIZED, version, op, 0, length);
    }
    int headerLength = pos - start;
    if (avail < headerLength + length) {
      return new Header(Kind.INCOMPLETE, version, op, headerLength, length);
    }
    return new Header(Kind.COMPLETE, version, op, headerLength, length);
  }
}
