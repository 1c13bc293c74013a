package io.scr.core.internal.net;

import io.scr.core.internal.protocol.ShortCircuitProtocol;
import io.scr.shm.ShmId;
import io.scr.shm.SlotId;
import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.net.SocketTimeoutException;
import java.util.concurrent.ConcurrentHashMap;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * The cheapest question a DataNode's UNIX socket answers, asked only while the DataNode is not
 * healthy: whether the process runs its request path at all.
 *
 * <ul>
 *   <li>A peer that advertised {@code ping} (the scr shim) gets op 127 PING ({@code 00 1C 7F 01
 *       04}), answered on its event loop without touching the dataset.
 *   <li>A stock DataNode has no probe of its own. It gets op 88 (release a slot) for a slot of a
 *       segment id that no DataNode ever made (all zero): a {@code DataXceiver} thread reads it,
 *       looks the segment up in the short-circuit registry (under the registry's lock, which fd
 *       requests also take) and answers {@code ERROR_INVALID}. It allocates nothing, passes no fd,
 *       and needs no block token, where op 89 would make and tear down a shared-memory segment per
 *       probe and op 87 would need a token and a block. The DataNode logs its usual INFO
 *       client-trace line per probe, at most one per probe interval while it is not healthy.
 * </ul>
 *
 * <p>A probe that is not answered in time leaves its request waiting on its connection: the next
 * probe of the path waits for that answer instead of sending another request, so a hung DataNode
 * finds at most one probe queued when it resumes, and its answer is read as soon as it comes.
 *
 * <p>Concurrency: thread-safe for different paths; one probe at a time per path (the caller, the
 * health registry, runs one per path). {@link #forget} and {@link #close} may be called from any
 * thread.
 */
public final class LivenessProbe implements Closeable {
  /** What one probe saw. */
  public enum Result {
    /** The DataNode answered (any status). */
    ANSWERED,
    /** No answer within the timeout; the request waits for the next probe. */
    NO_ANSWER,
    /** The DataNode closed the connection without an answer. */
    CLOSED
  }

  private static final SlotId NO_SUCH_SLOT = SlotId.of(ShmId.of(0, 0), 0);

  private final ConcurrentHashMap<String, DomainConnection> waiting = new ConcurrentHashMap<>();

  /**
   * Asks the DataNode at {@code path} (or waits for the answer to the request an earlier probe
   * left), waiting at most {@code timeoutMs} for the connect and as long again for the answer.
   *
   * @param ping whether the peer advertised PING
   * @throws DomainConnectException if nobody listens (its cause says why; a {@link
   *     SocketTimeoutException} cause means the connect itself timed out)
   * @throws IOException if the exchange broke otherwise
   */
  public Result probe(String path, boolean ping, int timeoutMs) throws IOException {
    DomainConnection c = waiting.remove(path);
    if (c == null) {
      c = connect(path, timeoutMs);
      try {
        c.send(
            ping
                ? ShortCircuitProtocol.encodePing()
                : ShortCircuitProtocol.encodeReleaseFds(NO_SUCH_SLOT));
      } catch (IOException e) {
        c.close();
        throw e;
      }
    }
    boolean keep = false;
    try {
      c.soTimeout(timeoutMs);
      int first;
      try {
        first = c.in().read();
      } catch (SocketTimeoutException e) {
        keep = true;
        waiting.put(path, c);
        return Result.NO_ANSWER;
      }
      if (first < 0) {
        return Result.CLOSED;
      }
      // The answer has begun: its few remaining bytes follow in the same segment.
      InputStream rest =
          new SequenceInputStream(new ByteArrayInputStream(new byte[] {(byte) first}), c.in());
      if (ping) {
        ShortCircuitProtocol.readFdResponse(rest);
      } else {
        ShortCircuitProtocol.readReleaseResponse(rest);
      }
      return Result.ANSWERED;
    } finally {
      if (!keep) {
        c.close();
      }
    }
  }

  private static DomainConnection connect(String path, int timeoutMs) throws IOException {
    AFUNIXSocket socket = AFUNIXSocket.newInstance();
    try {
      // As DomainSocketPool: junixsocket does not bound connect(2) by its timeout argument; the
      // send timeout (SO_TIMEOUT) does, on a listener whose accept queue is full.
      socket.setSoTimeout(timeoutMs);
      socket.connect(AFUNIXSocketAddress.of(new File(path)), timeoutMs);
      return new DomainConnection(path, socket, 0);
    } catch (IOException e) {
      try {
        socket.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new DomainConnectException(
          "cannot connect to DataNode socket "
              + path
              + ": "
              + e.getMessage()
              + "; "
              + DomainSocketPool.connectHint(path, e),
          e);
    }
  }

  /** Drops the request a probe of {@code path} left waiting (the DataNode answered elsewhere). */
  public void forget(String path) {
    DomainConnection c = waiting.remove(path);
    if (c != null) {
      c.close();
    }
  }

  /** Closes every waiting probe connection. */
  @Override
  public void close() {
    for (String path : waiting.keySet()) {
      forget(path);
    }
  }
}
