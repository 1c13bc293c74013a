package io.scr.core.internal.net;

import io.scr.core.internal.protocol.ProtocolException;
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
 * <p>Reads are buffered: one {@code recvmsg} takes whatever the peer has queued (up to {@value
 * #READ_AHEAD_BYTES} bytes), so a reply and the byte carrying its fds, sent back to back, usually
 * arrive in one call instead of three (the length, the body, the fds). The peer sends nothing an
 * exchange did not ask for, so an exchange ends with the buffer empty; a connection that has bytes
 * left over is not reused.
 *
 * <p>fd ownership: {@link #receiveFds} hands the received fds to the caller, who must close them;
 * they are the caller's alone (duplicates detached from the socket), so closing this connection
 * never closes them.
 */
public final class DomainConnection implements Closeable {
  /** Room for {@code MAX_PASSED_FDS} (16) fds in one control message. */
  private static final int ANCILLARY_BUFFER_BYTES = 512;

  /**
   * Read-ahead buffer: larger than a short-circuit reply (a few dozen bytes) and than a batch of
   * them; a longer message is read in several calls.
   */
  static final int READ_AHEAD_BYTES = 1024;

  private final String path;
  private final AFUNIXSocket socket;
  private final InputStream socketIn;
  private final InputStream in = new ReadAhead();
  private final byte[] readAhead = new byte[READ_AHEAD_BYTES];
  private int readPos;
  private int readLimit;
  private long socketReads;
  private final OutputStream out;
  private final long createdNanos;
  private volatile long lastUsedNanos;
  private boolean reusable = true;
  private boolean pooled;

  /** The socket timeout set now (ms), so that setting the same value again costs no syscall. */
  private int soTimeoutMs;

  DomainConnection(String path, AFUNIXSocket socket, long nowNanos) throws IOException {
    this.path = path;
    this.socket = socket;
    socket.setAncillaryReceiveBufferSize(ANCILLARY_BUFFER_BYTES);
    this.socketIn = socket.getInputStream();
    this.out = socket.getOutputStream();
    this.createdNanos = nowNanos;
    this.lastUsedNanos = nowNanos;
    this.soTimeoutMs = socket.getSoTimeout();
  }

  /**
   * Sets the timeout of each later read and write to {@code ms} (a syscall only when it changes):
   * an exchange bounded by the DataNode's health deadline sets it before it starts.
   */
  void soTimeout(int ms) throws IOException {
    if (ms != soTimeoutMs) {
      socket.setSoTimeout(ms);
      soTimeoutMs = ms;
    }
  }

  /** The socket path this connection is connected to. */
  public String path() {
    return path;
  }

  /** The input stream (buffered; see the class comment). */
  public InputStream in() {
    return in;
  }

  /**
   * Writes one frame with one call and flushes; starts an exchange, so fds or bytes left from an
   * earlier one would be a broken peer's.
   *
   * @throws ProtocolException if bytes of an earlier reply are still unread
   */
  public void send(byte[] frame) throws IOException {
    if (readPos != readLimit) {
      reusable = false;
      throw new ProtocolException(
          (readLimit - readPos)
              + " unexpected bytes from the DataNode at "
              + path
              + " before a request; closing the connection");
    }
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
    // The fds arrive with their byte, possibly in the read that took the reply before it: they
    // wait in the socket's list until taken here (every exchange takes or refuses its own).
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
    return reusable && readPos == readLimit && !socket.isClosed();
  }

  /** Reads from the socket so far (each one {@code recvmsg}); for tests. */
  long socketReads() {
    return socketReads;
  }

  /** Refills the empty read-ahead buffer with one read; false at the end of the stream. */
  private boolean fill() throws IOException {
    int n = socketIn.read(readAhead, 0, readAhead.length);
    socketReads++;
    if (n <= 0) {
      return false;
    }
    readPos = 0;
    readLimit = n;
    return true;
  }

  /** The connection's input: the read-ahead buffer, refilled by one socket read when empty. */
  private final class ReadAhead extends InputStream {
    @Override
    public int read() throws IOException {
      if (readPos == readLimit && !fill()) {
        return -1;
      }
      return readAhead[readPos++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (readPos == readLimit && !fill()) {
        return -1;
      }
      int n = Math.min(len, readLimit - readPos);
      System.arraycopy(readAhead, readPos, b, off, n);
      readPos += n;
      return n;
    }

    @Override
    public int available() {
      return readLimit - readPos;
    }
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
