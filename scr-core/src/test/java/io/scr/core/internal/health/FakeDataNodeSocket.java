package io.scr.core.internal.health;

import io.scr.core.internal.protocol.ShortCircuitProtocol;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;

/**
 * A DataNode's UNIX socket that accepts every connection and reads every request, but answers only
 * after {@link #resume()}: a hung DataNode (SIGSTOP, a GC pause) as the client sees it, since the
 * kernel completes a UNIX connect into the listen backlog whether the process runs or not. Once
 * resumed it answers each request at once, with an error status (an answer is all a health check
 * needs), or SUCCESS for the shim's PING. Counts requests by op.
 *
 * <p>It listens with the JDK's own UNIX-domain channels, not junixsocket's: closing a junixsocket
 * server socket while its accept is blocked could leave an unconnected socket behind, which the
 * cluster's leak check then reported against the code under test.
 */
public final class FakeDataNodeSocket implements Closeable {
  private final ServerSocketChannel server;
  private final Path path;
  private final Thread acceptor;
  private final List<SocketChannel> accepted = new CopyOnWriteArrayList<>();
  private final ConcurrentHashMap<Integer, AtomicInteger> requests = new ConcurrentHashMap<>();
  private volatile CountDownLatch resumed = new CountDownLatch(1);
  private final AtomicInteger connections = new AtomicInteger();

  private FakeDataNodeSocket(Path path) throws IOException {
    this.path = path;
    this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(path));
    this.acceptor = new Thread(this::acceptLoop, "fake-datanode-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** A hung DataNode listening at {@code path}. */
  public static FakeDataNodeSocket hung(Path path) throws IOException {
    return new FakeDataNodeSocket(path);
  }

  /** A DataNode at {@code path} that answers at once. */
  public static FakeDataNodeSocket answering(Path path) throws IOException {
    FakeDataNodeSocket f = new FakeDataNodeSocket(path);
    f.resume();
    return f;
  }

  /** The socket path. */
  public String path() {
    return path.toString();
  }

  /** Answers every request read so far and every later one. */
  public void resume() {
    resumed.countDown();
  }

  /** Requests of op {@code op} read so far (87 fds, 88 release, 89 segment, 127 extension). */
  public int requests(int op) {
    AtomicInteger n = requests.get(op);
    return n == null ? 0 : n.get();
  }

  /** Connections accepted so far. */
  public int connections() {
    return connections.get();
  }

  private void acceptLoop() {
    while (server.isOpen()) {
      try {
        SocketChannel s = server.accept();
        if (!server.isOpen()) {
          s.close();
          return;
        }
        connections.incrementAndGet();
        accepted.add(s);
        Thread t = new Thread(() -> serve(s), "fake-datanode-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return; // closed (an AsynchronousCloseException while blocked in accept)
      }
    }
  }

  private void serve(SocketChannel s) {
    try (InputStream in = Channels.newInputStream(s);
        OutputStream out = Channels.newOutputStream(s)) {
      DataInputStream din = new DataInputStream(in);
      while (true) {
        int b0 = in.read();
        if (b0 < 0) {
          return;
        }
        din.readUnsignedByte(); // version
        int op = din.readUnsignedByte();
        int len = readVarint(din);
        din.readFully(new byte[len]);
        requests.computeIfAbsent(op, k -> new AtomicInteger()).incrementAndGet();
        resumed.await();
        switch (op) {
          case ShortCircuitProtocol.OP_RELEASE_SHORT_CIRCUIT_FDS:
            ReleaseShortCircuitAccessResponseProto.newBuilder()
                .setStatus(Status.ERROR_INVALID)
                .setError("no such segment")
                .build()
                .writeDelimitedTo(out);
            break;
          case ShortCircuitProtocol.OP_REQUEST_SHORT_CIRCUIT_SHM:
            ShortCircuitShmResponseProto.newBuilder()
                .setStatus(Status.ERROR)
                .setError("no segments here")
                .build()
                .writeDelimitedTo(out);
            break;
          case ShortCircuitProtocol.OP_SCR_EXTENSION:
            BlockOpResponseProto.newBuilder()
                .setStatus(Status.SUCCESS)
                .build()
                .writeDelimitedTo(out);
            break;
          default:
            BlockOpResponseProto.newBuilder()
                .setStatus(Status.ERROR)
                .setMessage("Replica not found for this fake")
                .build()
                .writeDelimitedTo(out);
            break;
        }
        out.flush();
      }
    } catch (IOException | InterruptedException e) {
      // the client or the test closed the connection
    }
  }

  private static int readVarint(DataInputStream in) throws IOException {
    int result = 0;
    for (int shift = 0; shift < 32; shift += 7) {
      int b = in.readUnsignedByte();
      result |= (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw new IOException("malformed varint");
  }

  /** Stops listening and closes every accepted connection (the DataNode process is gone). */
  @Override
  public void close() throws IOException {
    server.close();
    try {
      acceptor.join(10_000); // no connection is accepted after the ones closed below
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (SocketChannel s : accepted) {
      s.close();
    }
    resume(); // handlers blocked in await() end on their closed sockets
    Files.deleteIfExists(path);
  }
}
