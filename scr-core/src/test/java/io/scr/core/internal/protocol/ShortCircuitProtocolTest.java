package io.scr.core.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.scr.shm.ShmId;
import io.scr.shm.SlotId;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.Test;

/** Pins the codec's bytes to Hadoop's own {@link Sender}. */
class ShortCircuitProtocolTest {
  private static final ExtendedBlock BLOCK =
      new ExtendedBlock("BP-1-127.0.0.1-1", 1073741825L, 1234, 1001);
  private static final ShmId SHM = ShmId.of(0x1122334455667788L, -42L);

  private static Token<BlockTokenIdentifier> token() {
    return new Token<>(
        new byte[] {1, 2, 3}, new byte[] {9, 8}, new Text("HDFS_BLOCK_TOKEN"), new Text("svc"));
  }

  private static ShortCircuitShm.SlotId hadoopSlot() {
    return new ShortCircuitShm.SlotId(new ShortCircuitShm.ShmId(SHM.hi(), SHM.lo()), 17);
  }

  @Test
  void requestFdsMatchesSenderWithAndWithoutSlot() throws Exception {
    for (boolean withSlot : new boolean[] {true, false}) {
      ByteArrayOutputStream stock = new ByteArrayOutputStream();
      new Sender(new DataOutputStream(stock))
          .requestShortCircuitFds(BLOCK, token(), withSlot ? hadoopSlot() : null, 1, true);
      byte[] ours =
          ShortCircuitProtocol.encodeRequestFds(
              BLOCK, token(), withSlot ? SlotId.of(SHM, 17) : null);
      assertArrayEquals(stock.toByteArray(), ours);
      assertEquals(0x57, ours[2]);
    }
  }

  @Test
  void releaseAndShmRequestsMatchSender() throws Exception {
    ByteArrayOutputStream stock = new ByteArrayOutputStream();
    new Sender(new DataOutputStream(stock)).releaseShortCircuitFds(hadoopSlot());
    assertArrayEquals(
        stock.toByteArray(), ShortCircuitProtocol.encodeReleaseFds(SlotId.of(SHM, 17)));
    stock.reset();
    new Sender(new DataOutputStream(stock)).requestShortCircuitShm("client_1");
    assertArrayEquals(stock.toByteArray(), ShortCircuitProtocol.encodeRequestShm("client_1"));
  }

  /**
   * HELLO is a stock op-88 frame, so a stock DataNode parses it as any release (and refuses it: the
   * segment id is ASCII "scr-shim"/"hello/1\0", never a random one it registered).
   */
  @Test
  void helloIsAStockReleaseOfTheHelloSlot() throws Exception {
    ByteArrayOutputStream stock = new ByteArrayOutputStream();
    new Sender(new DataOutputStream(stock))
        .releaseShortCircuitFds(
            new ShortCircuitShm.SlotId(
                new ShortCircuitShm.ShmId(
                    new java.math.BigInteger(
                            1, "scr-shim".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                        .longValue(),
                    new java.math.BigInteger(
                            1, "hello/1\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                        .longValue()),
                0));
    assertArrayEquals(stock.toByteArray(), ShortCircuitProtocol.encodeHello());
  }

  @Test
  void extensionFramesHaveTheShimsLayout() throws Exception {
    // [version 28][op 127][varint length][sub-op][...]: docs/shim.md "Extensions (op 127)".
    assertArrayEquals(new byte[] {0, 28, 127, 1, 1}, ShortCircuitProtocol.encodeExtensionHello());
    java.util.List<SlotId> slots = new java.util.ArrayList<>();
    for (int i = 0; i < 200; i++) {
      slots.add(SlotId.of(SHM, i));
    }
    byte[] frame = ShortCircuitProtocol.encodeBatchRelease(slots, 10, 150);
    ByteArrayInputStream in = new ByteArrayInputStream(frame);
    assertEquals(127, ShortCircuitProtocol.readOpHeader(in));
    int length = in.read() & 0x7f | (in.read() & 0x7f) << 7; // two varint bytes for > 127
    assertEquals(in.available(), length);
    assertEquals(ShortCircuitProtocol.EXT_BATCH_RELEASE, in.read());
    for (int i = 10; i < 150; i++) {
      ReleaseShortCircuitAccessRequestProto r =
          ReleaseShortCircuitAccessRequestProto.parseDelimitedFrom(in);
      assertEquals(SlotId.of(SHM, i), ShortCircuitProtocol.fromProto(r.getSlotId()));
    }
    assertEquals(0, in.available());
    assertThrows(
        IllegalArgumentException.class, () -> ShortCircuitProtocol.encodeBatchRelease(slots, 5, 5));
  }

  @Test
  void responsesAreReadExactlyLeavingTheFdByte() throws Exception {
    ByteArrayOutputStream wire = new ByteArrayOutputStream();
    BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setShortCircuitAccessVersion(1)
        .build()
        .writeDelimitedTo(wire);
    wire.write(1); // the fd-carrying byte
    ByteArrayInputStream in = new ByteArrayInputStream(wire.toByteArray());
    BlockOpResponseProto resp = ShortCircuitProtocol.readFdResponse(in);
    assertEquals(Status.SUCCESS, resp.getStatus());
    assertEquals(1, in.available(), "the fd byte must not be consumed");
    assertArrayEquals(
        wire.toByteArray(), concat(ShortCircuitProtocol.encodeFdSuccess(), new byte[] {1}));
  }

  @Test
  void headerAndMalformedInputAreRejected() throws Exception {
    byte[] frame = ShortCircuitProtocol.encodeReleaseFds(SlotId.of(SHM, 3));
    ByteArrayInputStream in = new ByteArrayInputStream(frame);
    assertEquals(88, ShortCircuitProtocol.readOpHeader(in));
    assertEquals(
        SlotId.of(SHM, 3),
        ShortCircuitProtocol.fromProto(ShortCircuitProtocol.readReleaseRequest(in).getSlotId()));
    assertThrows(
        ProtocolException.class,
        () -> ShortCircuitProtocol.readOpHeader(new ByteArrayInputStream(new byte[] {0, 27, 87})));
    assertThrows(
        EOFException.class,
        () -> ShortCircuitProtocol.readFdResponse(new ByteArrayInputStream(new byte[] {5, 8})));
    assertThrows(
        ProtocolException.class,
        () ->
            ShortCircuitProtocol.readFdResponse(
                new ByteArrayInputStream(
                    new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f})));
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
