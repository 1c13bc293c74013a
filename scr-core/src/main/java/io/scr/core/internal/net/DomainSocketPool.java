package io.scr.core.internal.net;

import io.scr.cache.Ticker;
import io.scr.core.ScrKeys;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.Deque;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * Long-lived junixsocket connections per DataNode socket path, for fd requests (op 87) and slot
 * releases (op 88). A connection serves one exchange at a time; after a successful exchange it goes
 * back to the path's idle deque (LIFO, so the warmest is reused and the rest age out). Idle
 * connections older than the idle expiry are closed instead of reused, because the DataNode closes
 * its side after {@code dfs.datanode.socket.reuse.keepalive} (4 s).
 *
 * <p>A stale pooled connection (the DataNode closed it while idle: EOF, reset or broken pipe) is
 * detected by the exchange failing; {@link #call} then retries the exchange exactly once on a fresh
 * connection. Timeouts are not retried (the DataNode is slow, not gone), nor are answers (a
 * refusal, a rejected token, a malformed reply: the connection worked). Connections for
 * shared-memory segments are not pooled: {@link #connect} hands out a fresh one the caller owns.
 *
 * <p>Bounded: every connect has the connect timeout; every read and write the socket timeout; an
 * exchange the caller bounds by a DataNode's health deadline ({@link #call(String, int, Exchange)})
 * and a segment connection ({@link #connect}, bounded by {@link Deadlines}) also by that.
 *
 * <p>Concurrency: lock-free; idle deques are concurrent; counts are approximate under races (at
 * worst one connection more than the idle maximum is kept briefly). {@link #close()} closes idle
 * connections; borrowed ones are closed when returned after close.
 */
public final class DomainSocketPool implements Closeable {
  private final int connectTimeoutMs;
  private final int readTimeoutMs;
  private final int maxIdlePerPath;
  private final long idleExpiryNanos;
  private final Ticker ticker;
  private final Map<String, Deque<DomainConnection>> idle = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> idleCounts = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicLong connects = new AtomicLong();
  private final AtomicLong reuses = new AtomicLong();
  private final AtomicLong staleRetries = new AtomicLong();
  private final AtomicLong connectFailures = new AtomicLong();
  private final Deadlines deadlines;

  /**
   * What bounds the exchanges of a path besides the pool's timeouts, and who hears of one that
   * waited the whole bound: the DataNode's health. Implementations must be thread-safe and cheap.
   */
  public interface Deadlines {
    /** No bound beyond the pool's timeouts. */
    Deadlines NONE =
        new Deadlines() {
          @Override
          public int deadlineMillis(String path) {
            return 0;
          }

          @Override
          public void timedOut(String path, String what) {}
        };

    /** The bound (ms) of the next exchange with {@code path}; 0 for none. */
    int deadlineMillis(String path);

    /** An exchange with {@code path} waited its whole bound. */
    void timedOut(String path, String what);
  }

  private DomainSocketPool(Builder b) {
    this.connectTimeoutMs = b.connectTimeoutMs;
    this.readTimeoutMs = b.readTimeoutMs;
    this.maxIdlePerPath = b.maxIdlePerPath;
    this.idleExpiryNanos = TimeUnit.MILLISECONDS.toNanos(b.idleExpiryMs);
    this.ticker = b.ticker;
    this.deadlines = b.deadlines;
  }

  /** A builder with the defaults of {@code io.scr.core.ScrKeys}. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /** One request/response exchange on a connection. */
  @FunctionalInterface
  public interface Exchange<T> {
    /**
     * Runs the exchange. Returning normally returns the connection to the pool unless the exchange
     * called {@link DomainConnection#markNotReusable()}; throwing closes it.
     */
    T run(DomainConnection connection) throws IOException;
  }

  /**
   * Runs {@code exchange} on a pooled connection to {@code path} (or a new one), retrying once on a
   * fresh connection if a pooled one turns out to be stale.
   *
   * @throws DomainConnectException if no connection could be made
   * @throws IOException what the exchange threw on a fresh connection
   */
  public <T> T call(String path, Exchange<T> exchange) throws IOException {
    return call(path, 0, exchange);
  }

  /**
   * As {@link #call(String, Exchange)}, with the connect and every read and write of the exchange
   * bounded by {@code deadlineMs} as well as by the pool's timeouts (the DataNode's health
   * deadline: a hung DataNode costs that long, not the socket timeout).
   *
   * @param deadlineMs the bound (ms), or 0 for the pool's timeouts alone
   */
  public <T> T call(String path, int deadlineMs, Exchange<T> exchange) throws IOException {
    int readMs = deadlineMs > 0 ? Math.min(deadlineMs, readTimeoutMs) : readTimeoutMs;
    DomainConnection c = pollIdle(path);
    if (c != null) {
      reuses.incrementAndGet();
      try {
        c.soTimeout(readMs);
        return runAndReturn(c, exchange);
      } catch (SocketTimeoutException
          | io.scr.core.internal.protocol.ProtocolException
          | ShortCircuitRefusedException
          | InvalidToken e) {
        throw e; // the DataNode answered, or is too slow: a fresh connection would not help
      } catch (IOException e) {
        // Stale: the DataNode closed the idle connection. Once more, on a fresh one.
        staleRetries.incrementAndGet();
      }
    }
    DomainConnection fresh =
        connect(path, deadlineMs > 0 ? Math.min(deadlineMs, connectTimeoutMs) : connectTimeoutMs);
    fresh.soTimeout(readMs);
    return runAndReturn(fresh, exchange);
  }

  /**
   * Runs {@code exchange} on a new connection to {@code path}, never a pooled one, and pools the
   * connection afterwards as {@link #call} does (used for the extension probe, whose answer from a
   * stock DataNode is to close the connection: a pooled connection closing could not be told from a
   * stale one).
   *
   * @throws DomainConnectException if no connection could be made
   * @throws IOException what the exchange threw; the connection is then closed
   */
  public <T> T callOnNewConnection(String path, Exchange<T> exchange) throws IOException {
    return runAndReturn(connect(path), exchange);
  }

  private <T> T runAndReturn(DomainConnection c, Exchange<T> exchange) throws IOException {
    boolean ok = false;
    try {
      T result = exchange.run(c);
      ok = true;
      return result;
    } finally {
      if (ok) {
        giveBack(c);
      } else {
        c.close();
      }
    }
  }

  /**
   * A new connection to {@code path} that the caller owns and must close (used for shared-memory
   * segments, whose life the DataNode ties to the connection).
   *
   * @throws DomainConnectException naming the path and the likely remedy
   */
  public DomainConnection connect(String path) throws IOException {
    int bound = deadlines.deadlineMillis(path);
    if (bound <= 0) {
      return connect(path, connectTimeoutMs);
    }
    DomainConnection c = connect(path, Math.min(bound, connectTimeoutMs));
    try {
      c.soTimeout(Math.min(bound, readTimeoutMs));
    } catch (IOException e) {
      c.close();
      throw e;
    }
    return c;
  }

  /** Tells the path's health that an exchange on a connection of {@link #connect} timed out. */
  void timedOut(String path, String what) {
    deadlines.timedOut(path, what);
  }

  private DomainConnection connect(String path, int connectMs) throws IOException {
    if (closed.get()) {
      throw new IOException("the domain socket pool is closed");
    }
    AFUNIXSocket socket = AFUNIXSocket.newInstance();
    try {
      // junixsocket 2.10 ignores connect's timeout outside virtual threads: connect(2) blocks, and
      // on a listener whose backlog is full (a DataNode not accepting: hung, or at its open-file
      // limit) it blocked for as long as that lasted. The kernel bounds that wait by the send
      // timeout, which SO_TIMEOUT sets too; EAGAIN then surfaces as SocketTimeoutException.
      socket.setSoTimeout(connectMs);
      socket.connect(AFUNIXSocketAddress.of(new File(path)), connectMs);
      socket.setSoTimeout(readTimeoutMs);
      connects.incrementAndGet();
      return new DomainConnection(path, socket, ticker.read());
    } catch (IOException e) {
      connectFailures.incrementAndGet();
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
              + connectHint(path, e),
          e);
    }
  }

  /**
   * The remedy for a failed connect, by the error the connect returned. Not by looking at the file
   * afterwards: when the client may not traverse the directory (0700) the file looks missing too,
   * and "does not exist" sent operators after a DataNode that was running.
   */
  static String connectHint(String path, IOException e) {
    String m = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT);
    if (e instanceof java.nio.file.AccessDeniedException || m.contains("permission denied")) {
      return "permission denied: the client user cannot reach the socket; the directory must be"
          + " traversable (o+x) by this user (and the socket writable, as the DataNode makes it)";
    }
    if (e instanceof java.io.FileNotFoundException
        || e instanceof java.nio.file.NoSuchFileException
        || m.contains("no such file")) {
      return "no such socket: is the DataNode running with "
          + ScrKeys.DFS_DOMAIN_SOCKET_PATH.name()
          + " (stock) or"
          + " scr.shim.socket.path (shim) = "
          + path
          + " on this host?";
    }
    if (m.contains("connection refused")) {
      return "connection refused: the socket file exists but nobody listens (a DataNode that"
          + " stopped left it behind): is the DataNode running?";
    }
    if (e instanceof SocketTimeoutException) {
      return "the connect timed out: the DataNode's accept queue is full (is the DataNode hung, at"
          + " its open-file limit, or flooded with connections by a local process?)";
    }
    return new File(path).exists()
        ? "is the DataNode running and is the socket's directory accessible to this user?"
        : "is a DataNode with this socket path running on this host?";
  }

  private DomainConnection pollIdle(String path) {
    Deque<DomainConnection> deque = idle.get(path);
    if (deque == null) {
      return null;
    }
    long now = ticker.read();
    DomainConnection c;
    while ((c = deque.pollFirst()) != null) {
      idleCounts.get(path).decrementAndGet();
      c.setPooled(false);
      if (now - c.lastUsedNanos() < idleExpiryNanos && c.isReusable()) {
        return c;
      }
      c.close();
    }
    return null;
  }

  private void giveBack(DomainConnection c) {
    if (!c.isReusable() || closed.get() || maxIdlePerPath <= 0) {
      c.close();
      return;
    }
    try {
      c.soTimeout(readTimeoutMs); // the next borrower may not bound its exchange
    } catch (IOException e) {
      c.close();
      return;
    }
    String path = c.path();
    AtomicInteger count = idleCounts.computeIfAbsent(path, p -> new AtomicInteger());
    if (count.incrementAndGet() > maxIdlePerPath) {
      count.decrementAndGet();
      c.close();
      return;
    }
    c.touch(ticker.read());
    c.setPooled(true);
    idle.computeIfAbsent(path, p -> new ConcurrentLinkedDeque<>()).offerFirst(c);
    if (closed.get()) {
      closeIdle();
    }
  }

  /**
   * The longest one exchange on a new connection can take before it fails: the connect timeout plus
   * the socket timeout (an exchange's reads and writes each have the socket timeout; the
   * short-circuit exchanges wait for one reply).
   */
  public long exchangeTimeoutMs() {
    return (long) connectTimeoutMs + readTimeoutMs;
  }

  /** Connections opened so far. */
  public long connectCount() {
    return connects.get();
  }

  /** Connects that failed (no socket, refused, timed out, permission denied). */
  public long connectFailureCount() {
    return connectFailures.get();
  }

  /** Idle connections held now, over every path (approximate under concurrent use). */
  public int idleConnectionCount() {
    int n = 0;
    for (AtomicInteger c : idleCounts.values()) {
      n += c.get();
    }
    return n;
  }

  /** Exchanges served by a pooled connection. */
  public long reuseCount() {
    return reuses.get();
  }

  /** Exchanges retried on a fresh connection because the pooled one was stale. */
  public long staleRetryCount() {
    return staleRetries.get();
  }

  /** Closes every idle connection; later calls fail. Idempotent. */
  @Override
  public void close() {
    closed.set(true);
    closeIdle();
  }

  private void closeIdle() {
    for (Map.Entry<String, Deque<DomainConnection>> e : idle.entrySet()) {
      DomainConnection c;
      while ((c = e.getValue().pollFirst()) != null) {
        idleCounts.get(e.getKey()).decrementAndGet();
        c.close();
      }
    }
  }

  /** Configuration of a {@link DomainSocketPool}. Not thread-safe. */
  public static final class Builder {
    private int connectTimeoutMs = 1000;
    private int readTimeoutMs = 5000;
    private int maxIdlePerPath = 8;
    private long idleExpiryMs = 3000;
    private Ticker ticker = Ticker.systemTicker();
    private Deadlines deadlines = Deadlines.NONE;

    private Builder() {}

    /**
     * What bounds the connections {@link DomainSocketPool#connect} hands out (shared-memory segment
     * requests) besides the timeouts: the DataNode's health deadline.
     */
    public Builder deadlines(Deadlines d) {
      this.deadlines = Objects.requireNonNull(d, "deadlines");
      return this;
    }

    /** Connect timeout, ms (> 0). */
    public Builder connectTimeoutMs(int ms) {
      this.connectTimeoutMs = positive(ms, "connect timeout");
      return this;
    }

    /** Timeout of each read and write, ms (> 0). */
    public Builder readTimeoutMs(int ms) {
      this.readTimeoutMs = positive(ms, "read timeout");
      return this;
    }

    /** Idle connections kept per path (>= 0). */
    public Builder maxIdlePerPath(int n) {
      if (n < 0) {
        throw new IllegalArgumentException("max idle connections must be >= 0: " + n);
      }
      this.maxIdlePerPath = n;
      return this;
    }

    /** Idle expiry, ms (> 0). */
    public Builder idleExpiryMs(long ms) {
      if (ms <= 0) {
        throw new IllegalArgumentException("idle expiry must be > 0 ms: " + ms);
      }
      this.idleExpiryMs = ms;
      return this;
    }

    /** Time source for idle expiry. */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** The pool. */
    public DomainSocketPool build() {
      return new DomainSocketPool(this);
    }

    private static int positive(int v, String what) {
      if (v <= 0) {
        throw new IllegalArgumentException(what + " must be > 0 ms: " + v);
      }
      return v;
    }
  }
}
