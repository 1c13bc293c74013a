package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.protocol.ProtocolException;
import io.scr.core.internal.protocol.ShortCircuitProtocol;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/** fd receipt on a real UNIX socket: what the caller gets is the caller's alone. */
class DomainConnectionTest {
  @TempDir Path dir;

  private final ExecutorService peer = Executors.newSingleThreadExecutor();
  private AFUNIXServerSocket server;
  private Path socketPath;

  @BeforeEach
  void listen() throws Exception {
    socketPath = dir.resolve("dn.sock");
    server = AFUNIXServerSocket.newInstance();
    server.bind(AFUNIXSocketAddress.of(socketPath.toFile()));
  }

  @AfterEach
  void stop() throws Exception {
    peer.shutdownNow();
    assertTrue(peer.awaitTermination(10, TimeUnit.SECONDS));
    server.close();
  }

  /** Sends one byte carrying {@code files}' fds on {@code s}, then closes the sender's copies. */
  private static void passFds(AFUNIXSocket s, OutputStream out, byte dataByte, File... files)
      throws java.io.IOException {
    FileDescriptor[] fds = new FileDescriptor[files.length];
    FileInputStream[] streams = new FileInputStream[files.length];
    for (int i = 0; i < files.length; i++) {
      streams[i] = new FileInputStream(files[i]);
      fds[i] = streams[i].getFD();
    }
    s.setOutboundFileDescriptors(fds);
    out.write(dataByte);
    out.flush();
    for (FileInputStream f : streams) {
      f.close(); // as the DataNode does: its copies go, ours stay
    }
  }

  /** The peer accepts one connection and sends one byte carrying {@code files}' fds. */
  private Future<?> sendFds(byte dataByte, File... files) {
    return peer.submit(
        () -> {
          try (AFUNIXSocket s = server.accept();
              InputStream in = s.getInputStream();
              OutputStream out = s.getOutputStream()) {
            passFds(s, out, dataByte, files);
            in.read(); // until the client closes
          }
          return null;
        });
  }

  private DomainConnection connect() throws Exception {
    AFUNIXSocket socket = AFUNIXSocket.newInstance();
    socket.connect(AFUNIXSocketAddress.of(socketPath.toFile()));
    socket.setSoTimeout(10_000);
    return new DomainConnection(socketPath.toString(), socket, 0);
  }

  private File file(String name, String content) throws Exception {
    Path p = dir.resolve(name);
    Files.write(p, content.getBytes(StandardCharsets.UTF_8));
    return p.toFile();
  }

  private static String readAll(FileDescriptor fd) throws Exception {
    try (FileChannel ch = new FileInputStream(fd).getChannel()) {
      ByteBuffer b = ByteBuffer.allocate((int) ch.size());
      while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
        // positional reads, as the replica reader does
      }
      return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8);
    }
  }

  /**
   * The peer accepts one connection, writes a SUCCESS reply, then (with {@code fdFiles}) one byte
   * carrying their fds and then {@code extra} bytes, all before {@code written} counts down.
   */
  private Future<?> replyThenFds(CountDownLatch written, byte[] extra, File... fdFiles) {
    return peer.submit(
        () -> {
          try (AFUNIXSocket s = server.accept();
              InputStream in = s.getInputStream();
              OutputStream out = s.getOutputStream()) {
            BlockOpResponseProto.newBuilder()
                .setStatus(Status.SUCCESS)
                .setMessage("ok")
                .build()
                .writeDelimitedTo(out);
            out.flush();
            if (fdFiles.length > 0) {
              passFds(s, out, (byte) 1, fdFiles);
            }
            out.write(extra);
            out.flush();
            written.countDown();
            in.read(); // until the client closes
          }
          return null;
        });
  }

  @Test
  void aReplyAndItsFdsQueuedTogetherAreReadWithOneRecvmsg() throws Exception {
    File data = file("blk_7", "block seven");
    File meta = file("blk_7_1.meta", "sums");
    CountDownLatch written = new CountDownLatch(1);
    Future<?> sent = replyThenFds(written, new byte[0], data, meta);
    FileDescriptor[] fds = new FileDescriptor[2];
    try (DomainConnection c = connect()) {
      assertTrue(written.await(10, TimeUnit.SECONDS));
      BlockOpResponseProto reply =
          ShortCircuitProtocol.readDelimited(c.in(), BlockOpResponseProto.parser());
      assertEquals("ok", reply.getMessage());
      assertEquals(1, c.receiveFds(fds, 2));
      assertEquals(1, c.socketReads(), "the reply and the fds' byte in one read (three before)");
      assertTrue(c.isReusable(), "nothing left over");
    }
    sent.get(10, TimeUnit.SECONDS);
    assertEquals("block seven", readAll(fds[0]));
    assertEquals("sums", readAll(fds[1]));
    for (FileDescriptor fd : fds) {
      new FileInputStream(fd).close();
    }
  }

  @Test
  void bytesLeftAfterAnExchangeMakeTheConnectionUnfitForTheNext() throws Exception {
    CountDownLatch written = new CountDownLatch(1);
    Future<?> sent = replyThenFds(written, new byte[] {42});
    try (DomainConnection c = connect()) {
      assertTrue(written.await(10, TimeUnit.SECONDS));
      ShortCircuitProtocol.readDelimited(c.in(), BlockOpResponseProto.parser());
      assertFalse(c.isReusable(), "an unexpected byte is waiting");
      ProtocolException e = assertThrows(ProtocolException.class, () -> c.send(new byte[] {0}));
      assertTrue(e.getMessage().contains("1 unexpected bytes"), e.getMessage());
    }
    sent.get(10, TimeUnit.SECONDS);
  }

  @Test
  void receivedFdsOutliveTheConnection() throws Exception {
    File data = file("blk_1", "block bytes");
    File meta = file("blk_1_1.meta", "checksums");
    Future<?> sent = sendFds((byte) 1, data, meta);
    FileDescriptor[] fds = new FileDescriptor[2];
    try (DomainConnection c = connect()) {
      assertEquals(1, c.receiveFds(fds, 2));
    }
    sent.get(10, TimeUnit.SECONDS);
    // junixsocket closes, with the socket, every received fd it still tracks: ours must not be.
    assertTrue(fds[0].valid() && fds[1].valid());
    assertEquals("block bytes", readAll(fds[0]));
    assertEquals("checksums", readAll(fds[1]));
  }

  @Test
  void theWrongNumberOfFdsIsAProtocolErrorAndLeavesNothingOpen() throws Exception {
    File data = file("blk_2", "x");
    Future<?> sent = sendFds((byte) 0, data);
    FileDescriptor[] fds = new FileDescriptor[2];
    try (DomainConnection c = connect()) {
      ProtocolException e = assertThrows(ProtocolException.class, () -> c.receiveFds(fds, 2));
      assertTrue(e.getMessage().contains("expected 2 fds"), e.getMessage());
    }
    sent.get(10, TimeUnit.SECONDS);
    assertArrayEquals(new FileDescriptor[2], fds);
    assertFalse(openFdTargets().contains(data.getPath()), "the one fd received was closed");
  }

  @Test
  void aWriteToAPeerThatStopsReadingFailsWithinTheSocketTimeout() throws Exception {
    java.util.concurrent.CountDownLatch accepted = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    Future<?> peerSide =
        peer.submit(
            () -> {
              try (AFUNIXSocket s = server.accept()) {
                accepted.countDown();
                done.await(); // never reads: the client's send buffer fills up
              }
              return null;
            });
    AFUNIXSocket socket = AFUNIXSocket.newInstance();
    socket.connect(AFUNIXSocketAddress.of(socketPath.toFile()));
    socket.setSoTimeout(300);
    try (DomainConnection c = new DomainConnection(socketPath.toString(), socket, 0)) {
      assertTrue(accepted.await(10, TimeUnit.SECONDS));
      byte[] frame = new byte[1 << 20];
      java.io.IOException e =
          org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
              java.time.Duration.ofSeconds(30),
              () ->
                  assertThrows(
                      java.io.IOException.class,
                      () -> {
                        for (int i = 0; i < 256; i++) { // far more than any socket buffer
                          c.send(frame);
                        }
                      }),
              "a blocked write must end with the socket timeout, not hang");
      assertTrue(e instanceof java.net.SocketTimeoutException, e.toString());
    } finally {
      done.countDown();
      peerSide.get(10, TimeUnit.SECONDS);
    }
  }

  private static java.util.List<String> openFdTargets() throws Exception {
    java.util.List<String> out = new java.util.ArrayList<>();
    File[] links = new File("/proc/self/fd").listFiles();
    if (links != null) {
      for (File l : links) {
        try {
          out.add(Files.readSymbolicLink(l.toPath()).toString());
        } catch (java.io.IOException e) {
          // the listing's own fd, closed by now
        }
      }
    }
    return out;
  }
}
