package io.scr.shim;

import java.io.Closeable;
import java.io.DataOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ShortCircuitShmResponseProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.net.unix.DomainSocket;

/**
 * A stock-client-shaped peer for protocol tests: stock {@link DomainSocket} (libhadoop) and stock
 * {@link Sender} frames, reading replies exactly as {@code BlockReaderFactory} does.
 */
final class RawPeer implements Closeable {
  final DomainSocket socket;
  final Sender sender;

  RawPeer(String path) throws IOException {
    socket = DomainSocket.connect(path);
    socket.setAttribute(DomainSocket.RECEIVE_TIMEOUT, 20_000);
    sender = new Sender(new DataOutputStream(socket.getOutputStream()));
  }

  InputStream in() {
    return socket.getInputStream();
  }

  void writeRaw(byte[] bytes) throws IOException {
    socket.getOutputStream().write(bytes);
  }

  BlockOpResponseProto readBlockOpResponse() throws IOException {
    return BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in()));
  }

  ShortCircuitShmResponseProto readShmResponse() throws IOException {
    return ShortCircuitShmResponseProto.parseFrom(PBHelperClient.vintPrefixed(in()));
  }

  ReleaseShortCircuitAccessResponseProto readReleaseResponse() throws IOException {
    return ReleaseShortCircuitAccessResponseProto.parseFrom(PBHelperClient.vintPrefixed(in()));
  }

  /** One recvmsg, as the stock client does; returns the data byte and fills {@code fds}. */
  int receiveFds(FileInputStream[] fds) throws IOException {
    byte[] buf = new byte[1];
    int n = socket.recvFileInputStreams(fds, buf, 0, 1);
    if (n <= 0) {
      throw new IOException("no fd message: " + n);
    }
    return buf[0];
  }

  /** True if the shim closed the connection (EOF) before the read timeout. */
  boolean closedByPeer() throws IOException {
    try {
      return in().read() < 0;
    } catch (IOException e) {
      // ECONNRESET counts as closed; a timeout does not
      if (String.valueOf(e.getMessage()).contains("timed out")) {
        return false;
      }
      return true;
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }

  static void closeAll(FileInputStream[] fds) throws IOException {
    for (FileInputStream f : fds) {
      if (f != null) {
        f.close();
      }
    }
  }
}
