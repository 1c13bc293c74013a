package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmIdProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmSlotProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that stops reading cannot keep its pending reply (and the connection, its fds and slots)
 * forever, and one op-127 BATCH_RELEASE frame cannot make a reply of hundreds of kilobytes.
 */
class ShimWriteDeadlineTest {
  private static final int MAX = Integer.MAX_VALUE;
  private static final long WRITE_TIMEOUT_MS = 1_000;

  private final ShimMetrics metrics = new ShimMetrics();
  private final ClientLimits limits = new ClientLimits(MAX, MAX, MAX);
  private final SegmentRegistry registry = new SegmentRegistry(limits, metrics);
  private final ShortCircuitService service =
      TestServices.withoutTokens(
          () -> {
            throw new AssertionError("no replica is asked for");
          },
          registry,
          limits,
          metrics);

  private static byte[] frame(int op, byte[] body) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    DataOutputStream d = new DataOutputStream(out);
    d.writeShort(RequestFrames.DATA_TRANSFER_VERSION);
    d.writeByte(op);
    int n = body.length;
    while (n >= 0x80) {
      d.writeByte((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    d.writeByte(n);
    d.write(body);
    return out.toByteArray();
  }

  private static final byte[] HELLO;

  static {
    try {
      HELLO =
          frame(ShortCircuitService.OP_SCR_EXTENSION, new byte[] {ShortCircuitService.EXT_HELLO});
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static SocketChannel connect(Path socket) throws IOException {
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    ch.connect(UnixDomainSocketAddress.of(socket));
    return ch;
  }

  private static void poll(String what, java.util.function.BooleanSupplier done)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() - deadline < 0, "timed out waiting until " + what);
      Thread.sleep(20);
    }
  }

  /**
   * Starts a client thread that writes {@code hellos} pipelined HELLOs on {@code ch} and never
   * reads a reply, adding what the kernel took to {@code taken}, until done or the shim closes it.
   */
  private static Thread flood(SocketChannel ch, int hellos, AtomicLong taken) {
    Thread flooder =
        new Thread(
            () -> {
              ByteBuffer many = ByteBuffer.allocate(HELLO.length * hellos);
              while (many.hasRemaining()) {
                many.put(HELLO);
              }
              many.flip();
              try {
                while (many.hasRemaining()) {
                  taken.addAndGet(ch.write(many));
                }
              } catch (IOException closedByTheShim) {
                // expected once the shim gives up on this client
              }
            },
            "non-reading-client");
    flooder.setDaemon(true);
    flooder.start();
    return flooder;
  }

  @Test
  void aClientThatStopsReadingIsClosedAndOthersAreStillServed(@TempDir Path dir) throws Exception {
    Configuration conf = new Configuration(false);
    conf.set(ScrShimKeys.WRITE_TIMEOUT_MS.name(), Long.toString(WRITE_TIMEOUT_MS));
    Path socket = dir.resolve("dn.sock");
    ShimServer server =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
    server.start();
    try (SocketChannel stuck = connect(socket)) {
      // Pipelined HELLOs that it never reads: the replies fill the socket buffer after a few
      // hundred, and the next reply cannot be written. 100 KB in all, less than the 128 KiB a
      // connection may send while served (more is closed at once: the next test).
      Thread flooder = flood(stuck, 20_000, new AtomicLong());
      poll(
          "the shim closes the client that does not read",
          () -> metrics.rejections(ShimMetrics.Rejection.WRITE_TIMEOUT) == 1);
      poll("the connection is gone", () -> metrics.liveConnections.sum() == 0);
      // The client sees the end of the stream after the replies that were written: EOF, or a
      // reset when the shim closed with requests of this client still unread (a UNIX socket
      // closed with data in its receive queue resets its peer; which one is timing).
      DataInputStream in = new DataInputStream(Channels.newInputStream(stuck));
      long replies = 0;
      try {
        while (BlockOpResponseProto.parseDelimitedFrom(in) != null) {
          replies++;
        }
      } catch (java.net.SocketException reset) {
        assertTrue(String.valueOf(reset.getMessage()).contains("reset"), "not a reset: " + reset);
      }
      assertTrue(replies < 20_000, "not every reply was written: " + replies);
      flooder.join(TimeUnit.SECONDS.toMillis(60));

      try (SocketChannel other = connect(socket)) {
        other.write(ByteBuffer.wrap(HELLO));
        BlockOpResponseProto hello =
            BlockOpResponseProto.parseDelimitedFrom(Channels.newInputStream(other));
        assertEquals(Status.SUCCESS, hello.getStatus(), "another client is served");
      }
    } finally {
      server.close();
    }
  }

  @Test
  void aClientThatSendsWithoutReadingItsRepliesCannotFillTheDataNodesHeap(@TempDir Path dir)
      throws Exception {
    Configuration conf = new Configuration(false);
    conf.set(ScrShimKeys.WRITE_TIMEOUT_MS.name(), "60000"); // the deadline must not be what acts
    Path socket = dir.resolve("dn.sock");
    ShimServer server =
        new ShimServer(
            socket, ShimConfig.from(conf), service, registry, limits, metrics, Ticker.SYSTEM);
    server.start();
    int hellos = 2_000_000; // 10 MB of requests
    AtomicLong taken = new AtomicLong();
    try (SocketChannel flooding = connect(socket)) {
      Thread flooder = flood(flooding, hellos, taken);
      poll(
          "the shim closes the client that sends without reading",
          () -> metrics.rejections(ShimMetrics.Rejection.PENDING_INPUT) == 1);
      poll("the connection is gone", () -> metrics.liveConnections.sum() == 0);
      flooder.join(TimeUnit.SECONDS.toMillis(60));
      assertEquals(0, metrics.rejections(ShimMetrics.Rejection.WRITE_TIMEOUT));
      // Answered until its replies filled the socket (a few hundred), then closed once 128 KiB
      // (2 x scr.shim.max.request.bytes) waited: before, the shim read on until the write
      // deadline, 4 to 20 MB in 1 s.
      assertTrue(
          metrics.requests(ShimMetrics.OpKind.EXT_HELLO, Status.SUCCESS) < 10_000,
          "answered while the client read nothing");
      long total = (long) HELLO.length * hellos;
      assertTrue(
          taken.get() < total / 2,
          "the shim went on reading a client whose reply was pending: "
              + taken.get()
              + " of "
              + total
              + " bytes taken");
    } finally {
      server.close();
    }
  }

  private static byte[] batchRelease(int items) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(ShortCircuitService.EXT_BATCH_RELEASE);
    for (int i = 0; i < items; i++) {
      ReleaseShortCircuitAccessRequestProto.newBuilder()
          .setSlotId(
              ShortCircuitShmSlotProto.newBuilder()
                  .setShmId(ShortCircuitShmIdProto.newBuilder().setHi(i).setLo(-i))
                  .setSlotIdx(i % 128))
          .build()
          .writeDelimitedTo(body);
    }
    return body.toByteArray();
  }

  @Test
  void aBatchReleaseOfBogusItemsGetsAReplyOfAFewBytesPerItem() throws IOException {
    int items = ShortCircuitService.EXT_MAX_RELEASE_BATCH;
    Reply r = service.handle(ShortCircuitService.OP_SCR_EXTENSION, batchRelease(items), 4242);
    ByteArrayInputStream in = new ByteArrayInputStream(r.bytes);
    ReleaseShortCircuitAccessResponseProto first =
        ReleaseShortCircuitAccessResponseProto.parseDelimitedFrom(in);
    assertEquals(Status.ERROR_INVALID, first.getStatus());
    assertTrue(first.getError().contains("no shared memory segment"), first.getError());
    int answered = 1;
    while (ReleaseShortCircuitAccessResponseProto.parseDelimitedFrom(in) != null) {
      answered++;
    }
    assertEquals(items, answered, "one response per item, in order");
    assertTrue(
        r.bytes.length < items * 16,
        "a reply of " + r.bytes.length + " bytes for " + items + " bogus items");
  }

  @Test
  void aBatchReleaseOverTheCapClosesTheConnection() throws IOException {
    Reply r =
        service.handle(
            ShortCircuitService.OP_SCR_EXTENSION,
            batchRelease(ShortCircuitService.EXT_MAX_RELEASE_BATCH + 1),
            4242);
    assertTrue(r.closeOnly, "closed without a reply, like any malformed request");
  }
}
