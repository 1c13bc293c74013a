package io.scr.core.net;

import io.scr.core.protocol.ProtocolException;
import java.io.Closeable;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.FileDescriptorCast;

/**
 * One connection to a DataNode's UNIX socket (junixsocket), with exact-read streams and fd receipt.
 * Every read and write is bounded by the socket timeout the pool set: junixsocket applies {@code
 * SO_TIMEOUT} to sends as well as receives, so a write to a DataNode that stopped reading fails
 * with {@link java.net.SocketTimeoutException} (pinned by {@code DomainConnectionTest}); the pool
 * then closes the connection, never reusing one with a half-written frame.
 *
 * <p>Not thread-safe: one exchange at a time, by the thread that borrowed it from the {@link
 * DomainSocketPool}. {@link #close()} is idempotent and may be called from any thread (it wakes a
 * blocked reader).
 *
 * <p>fd ownership: {@link #receiveFds} hands the received fds to the caller, who must close them;
 * they are the caller's alone (duplicates detached from the socket), so closing this connection
 * never closes them.
 */
public final class DomainConnection implements Closeable {
  /** Room for {@code MAX_PASSED_FDS} (16) fds in one control message. */
  private static final int ANCILLARY_BUFFER_BYTES = 512;

  private final String path;
  private final AFUNIXSocket socket;
  private final InputStream in;
  private final OutputStream out;
  private final long createdNanos;
  private volatile long lastUsedNanos;
  private boolean reusable = true;
  private boolean pooled;

  DomainConnection(String path, AFUNIXSocket socket, long nowNanos) throws IOException {
    this.path = path;
    this.socket = socket;
    socket.setAncillaryReceiveBufferSize(ANCILLARY_BUFFER_BYTES);
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
    this.createdNanos = nowNanos;
    this.lastUsedNanos = nowNanos;
  }

  /** The socket path this connection is connected to. */
  public String path() {
    return path;
  }

  /** The unbuffered input stream; read exactly what the protocol defines, never ahead. */
  public InputStream in() {
    return in;
  }

  /** Writes one frame with one call and flushes. */
  public void send(byte[] frame) throws IOException {
    out.write(frame);
    out.flush();
  }

  /** Writes one byte (the fd receipt). */
  public void sendByte(int b) throws IOException {
    out.write(b);
    out.flush();
  }

  /**
   * Receives the one-byte message that carries {@code expected} fds ({@code SCM_RIGHTS}).
   *
   * @param fdsOut receives the fds, in the order the peer sent them; the caller owns and closes
   *     them (on failure none are left open)
   * @return the data byte (0..255)
   * @throws EOFException if the peer closed the connection instead
   * @throws ProtocolException if fewer or more than {@code expected} fds arrived
   */
  public int receiveFds(FileDescriptor[] fdsOut, int expected) throws IOException {
    socket.clearReceivedFileDescriptors();
    int b = in.read();
    FileDescriptor[] fds = socket.getReceivedFileDescriptors();
    if (b < 0) {
      closeAll(fds);
      throw new EOFException(
          "DataNode at " + path + " closed the connection instead of sending fds");
    }
    int got = fds == null ? 0 : fds.length;
    if (got != expected) {
      closeAll(fds);
      throw new ProtocolException(
          "expected "
              + expected
              + " fds from the DataNode at "
              + path
              + " but received "
              + got
              + " (is this process at its open-file limit? check ulimit -n)");
    }
    try {
      for (int i = 0; i < expected; i++) {
        fdsOut[i] = detach(fds[i]);
      }
    } catch (IOException e) {
      closeAll(fdsOut);
      Arrays.fill(fdsOut, 0, expected, null);
      closeAll(fds);
      throw e;
    }
    return b;
  }

  /**
   * Takes a received fd away from the socket. junixsocket keeps every fd it received in a table of
   * its socket and closes those still open when the socket closes, so an fd handed out as is would
   * be closed under its user as soon as this connection is closed (idle expiry, a stale retry, the
   * pool closing) while a replica still reads it. The caller gets a duplicate that only it owns;
   * the original is closed here, which also drops it from the socket's table.
   */
  private FileDescriptor detach(FileDescriptor received) throws IOException {
    FileDescriptor own;
    try {
      own = FileDescriptorCast.duplicating(received).getFileDescriptor();
    } catch (IOException e) {
      throw new IOException(
          "cannot duplicate an fd received from the DataNode at "
              + path
              + " (is this process at its open-file limit? check ulimit -n): "
              + e.getMessage(),
          e);
    } finally {
      closeAll(new FileDescriptor[] {received});
    }
    return own;
  }

  /** Marks the connection as not to be returned to the pool (the peer closes it, or it broke). */
  public void markNotReusable() {
    reusable = false;
  }

  boolean isReusable() {
    return reusable && !socket.isClosed();
  }

  boolean isPooled() {
    return pooled;
  }

  void setPooled(boolean pooled) {
    this.pooled = pooled;
  }

  long createdNanos() {
    return createdNanos;
  }

  long lastUsedNanos() {
    return lastUsedNanos;
  }

  void touch(long nowNanos) {
    lastUsedNanos = nowNanos;
  }

  /** The underlying socket, for the segment watcher (which switches it to non-blocking). */
  AFUNIXSocket socket() {
    return socket;
  }

  @Override
  public void close() {
    reusable = false;
    try {
      socket.close();
    } catch (IOException e) {
      // Closing a UNIX socket only fails if it is already broken; nothing left to release.
    }
  }

  static void closeAll(FileDescriptor[] fds) {
    if (fds == null) {
      return;
    }
    for (FileDescriptor fd : fds) {
      if (fd != null && fd.valid()) {
        try {
          new FileInputStream(fd).close();
        } catch (IOException e) {
          // Best effort: the fd is invalid already.
        }
      }
    }
  }

  @Override
  public String toString() {
    return "DomainConnection{" + path + (socket.isClosed() ? ", closed}" : "}");
  }
}
