package io.scr.shim;

import io.scr.config.ConfigKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The catalogue of every configuration key the shim reads, with its type, default and meaning. The
 * shim reads keys only through this class, and {@code docs/configuration.md} is generated from it.
 *
 * <p>All keys are read from the DataNode's own configuration ({@code hdfs-site.xml}) when the
 * plugin starts. Immutable and thread-safe.
 */
public final class ScrShimKeys {
  private static final List<ConfigKey<?>> ALL = new ArrayList<>();

  /**
   * UNIX socket the shim listens on; {@code _PORT} is replaced by the DataNode's transfer port, as
   * stock {@code dfs.domain.socket.path} does. Required: without it the plugin logs why and serves
   * nothing.
   */
  public static final ConfigKey<String> SOCKET_PATH =
      define(
          "scr.shim.socket.path",
          String.class,
          "",
          "UNIX socket path the shim serves short-circuit requests on; _PORT becomes the DataNode"
              + " transfer port. Point stock clients' dfs.domain.socket.path at it.");

  /** listen(2) backlog. Stock hard-codes 128; connect() stalls ~3 s when the queue overflows. */
  public static final ConfigKey<Integer> SOCKET_BACKLOG =
      define(
          "scr.shim.socket.backlog",
          Integer.class,
          1024,
          "listen(2) backlog of the shim socket (stock DataNodes hard-code 128; overflow costs"
              + " clients a 3-second connect retry). The kernel caps it at net.core.somaxconn.");

  /** Netty event-loop threads serving connections. */
  public static final ConfigKey<Integer> IO_THREADS =
      define("scr.shim.io.threads", Integer.class, 2, "Netty epoll event-loop threads.");

  /** Threads that open replica files and check tokens, off the event loop. */
  public static final ConfigKey<Integer> WORKER_THREADS =
      define(
          "scr.shim.worker.threads",
          Integer.class,
          4,
          "Threads that serve batched releases and extensions, shared-memory requests when"
              + " segments are files in the fallback directory (memfd segments and single slot"
              + " releases are served on the event loops: memory only), and fd requests while"
              + " they are off the event loops (see scr.shim.fd.requests.on.event.loop).");

  /**
   * Serve fd requests (op 87) on the event loop that decoded them instead of a worker: no hand-off,
   * two thread wake-ups per request as a stock DataXceiver; a slow one moves them to the workers
   * for a while ({@link FdRequestRouting}).
   */
  public static final ConfigKey<Boolean> FD_REQUESTS_ON_EVENT_LOOP =
      define(
          "scr.shim.fd.requests.on.event.loop",
          Boolean.class,
          true,
          "Open replica files for REQUEST_SHORT_CIRCUIT_FDS (op 87) on the event loop that decoded"
              + " the request rather than on a worker: two thread wake-ups per request instead of"
              + " four (a replica's first read measured 0.53-0.66x stock's median served here in"
              + " three rounds, 1.23-1.51x through the workers). The loop's other connections wait"
              + " while the"
              + " files are opened, so an fd request slower than scr.shim.fd.requests.loop.max.ms"
              + " whose loop thread read from storage (a cold directory or file) sends fd requests"
              + " to the workers for scr.shim.fd.requests.loop.backoff.ms. false: always on the"
              + " workers.");

  /** An fd request on an event loop slower than this, on the disk, moves them to the workers. */
  public static final ConfigKey<Long> FD_REQUESTS_LOOP_MAX_MS =
      define(
          "scr.shim.fd.requests.loop.max.ms",
          Long.class,
          5L,
          "An fd request that takes longer than this on an event loop (files opened and answer"
              + " built; tens of microseconds are usual) because the loop thread read from storage"
              + " (a directory or meta file not in the kernel's caches; told from the thread's"
              + " getrusage) sends fd requests to the worker threads for"
              + " scr.shim.fd.requests.loop.backoff.ms, so that a slow disk does not stall the"
              + " loop's other connections; counted in fd_requests_moved_to_workers, the first move"
              + " logged. A slow request that only waited for a lock (up to 10 times this), a"
              + " garbage collection or a core, or computed, does not move them (a worker would"
              + " wait as long): fd_requests_slow_kept_on_loop.");

  /** How long fd requests stay on the workers after a slow one on an event loop. */
  public static final ConfigKey<Long> FD_REQUESTS_LOOP_BACKOFF_MS =
      define(
          "scr.shim.fd.requests.loop.backoff.ms",
          Long.class,
          30000L,
          "How long fd requests are served by the worker threads after one took longer than"
              + " scr.shim.fd.requests.loop.max.ms on an event loop; then they return to the event"
              + " loops.");

  /** Requests waiting for a worker beyond this are refused with ERROR and the connection closed. */
  public static final ConfigKey<Integer> WORKER_QUEUE =
      define(
          "scr.shim.worker.queue",
          Integer.class,
          4096,
          "Requests queued for workers before new ones are refused (ERROR, connection closed).");

  /** Largest request body accepted; larger length prefixes close the connection. */
  public static final ConfigKey<Integer> MAX_REQUEST_BYTES =
      define(
          "scr.shim.max.request.bytes",
          Integer.class,
          65536,
          "Largest protobuf request body accepted; a larger length prefix closes the connection."
              + " A connection that sends more than twice this while its request is served is"
              + " closed too (a client sending without reading its replies).");

  /** How long to wait for the client's receipt byte after passing fds. */
  public static final ConfigKey<Long> RECEIPT_TIMEOUT_MS =
      define(
          "scr.shim.receipt.timeout.ms",
          Long.class,
          60000L,
          "How long the shim waits for the receipt byte after passing fds (stock waits"
              + " dfs.client.socket-timeout); on timeout or EOF the slot is unregistered.");

  /** A reply the client does not read within this long closes its connection. */
  public static final ConfigKey<Long> WRITE_TIMEOUT_MS =
      define(
          "scr.shim.write.timeout.ms",
          Long.class,
          10000L,
          "How long a reply (its bytes, then its fds) may wait for a client that does not read"
              + " its socket; then the connection is closed and the reply's fds and slots are"
              + " released (stock bounds the same with dfs.datanode.socket.write.timeout). A"
              + " reply is small, so a reading client never comes near it.");

  /** A connection with no request in flight is closed after this long (not shm connections). */
  public static final ConfigKey<Long> IDLE_TIMEOUT_MS =
      define(
          "scr.shim.connection.idle.timeout.ms",
          Long.class,
          60000L,
          "Closes a request connection that sends nothing for this long; shared-memory"
              + " connections live as long as the client keeps them.");

  /** Connections one client process (by peer pid) may hold open at once. */
  public static final ConfigKey<Integer> CLIENT_MAX_CONNECTIONS =
      define(
          "scr.shim.client.max.connections",
          Integer.class,
          1024,
          "Open connections one client process (SO_PEERCRED pid) may hold; more are answered"
              + " ERROR and closed.");

  /** Shared-memory segments one client process may hold. */
  public static final ConfigKey<Integer> CLIENT_MAX_SEGMENTS =
      define(
          "scr.shim.client.max.segments",
          Integer.class,
          256,
          "Shared-memory segments (8 KiB, 128 slots each) one client process may hold; more are"
              + " answered ERROR_UNSUPPORTED so stock clients stop asking.");

  /** Registered slots one client process may hold. */
  public static final ConfigKey<Integer> CLIENT_MAX_SLOTS =
      define(
          "scr.shim.client.max.slots",
          Integer.class,
          16384,
          "Registered slots one client process may hold; more are answered ERROR.");

  /** Open connections of all processes of one uid together. */
  public static final ConfigKey<Integer> UID_MAX_CONNECTIONS =
      define(
          "scr.shim.uid.max.connections",
          Integer.class,
          2048,
          "Open connections all client processes of one user (SO_PEERCRED uid) may hold together,"
              + " so a client that forks does not get fresh quotas; more are answered ERROR and"
              + " closed.");

  /** Shared-memory segments of all processes of one uid together. */
  public static final ConfigKey<Integer> UID_MAX_SEGMENTS =
      define(
          "scr.shim.uid.max.segments",
          Integer.class,
          1024,
          "Shared-memory segments all client processes of one user may hold together; more are"
              + " answered ERROR_UNSUPPORTED.");

  /** Registered slots of all processes of one uid together. */
  public static final ConfigKey<Integer> UID_MAX_SLOTS =
      define(
          "scr.shim.uid.max.slots",
          Integer.class,
          65536,
          "Registered slots all client processes of one user may hold together; more are"
              + " answered ERROR.");

  /** Open connections to the shim in total, refused at accept. */
  public static final ConfigKey<Integer> MAX_CONNECTIONS =
      define(
          "scr.shim.max.connections",
          Integer.class,
          4096,
          "Open connections to the shim from all clients together; more are closed as soon as"
              + " they are accepted (stock: dfs.datanode.max.transfer.threads, also 4096).");

  /** Fds opened for one client's replies and not yet handed over. */
  public static final ConfigKey<Integer> CLIENT_MAX_PENDING_FDS =
      define(
          "scr.shim.client.max.pending.fds",
          Integer.class,
          512,
          "Replica fds opened for one client process's replies and not yet handed over (a client"
              + " that does not read its socket holds them until scr.shim.write.timeout.ms); an fd"
              + " request beyond it is answered ERROR, so the client reads that block the stock"
              + " way.");

  /** Fds opened for the replies of all processes of one uid and not yet handed over. */
  public static final ConfigKey<Integer> UID_MAX_PENDING_FDS =
      define(
          "scr.shim.uid.max.pending.fds",
          Integer.class,
          2048,
          "As scr.shim.client.max.pending.fds, for all client processes of one user together.");

  /** Fds opened for replies and not yet handed over, shim-wide. */
  public static final ConfigKey<Integer> MAX_PENDING_FDS =
      define(
          "scr.shim.max.pending.fds",
          Integer.class,
          8192,
          "Replica fds opened for replies and not yet handed over, all clients together (stock"
              + " holds at most 2 per transfer thread: 8192 at 4096 threads); keeps clients that"
              + " do not read from exhausting the DataNode's fd limit.");

  /** Reply bytes queued for one client and not yet written to its socket. */
  public static final ConfigKey<Long> CLIENT_MAX_PENDING_REPLY_BYTES =
      define(
          "scr.shim.client.max.pending.reply.bytes",
          Long.class,
          1048576L,
          "Reply bytes queued for one client process and not yet written to its sockets; a"
              + " connection whose reply would go beyond it is closed (its fds and slots"
              + " released). One reply per connection is always allowed.");

  /** How long a request may take to arrive once its first byte did. */
  public static final ConfigKey<Long> REQUEST_TIMEOUT_MS =
      define(
          "scr.shim.request.timeout.ms",
          Long.class,
          10000L,
          "How long a request may take to arrive in full once its first byte did, and how long a"
              + " connection refused by a per-client or per-user limit may take to send the"
              + " request that gets the refusal; then the connection is closed. A real request is"
              + " one write of at most a few KiB, so only a client dribbling bytes comes near it.");

  /** How often the invalidator polls the replica map for registered blocks. */
  public static final ConfigKey<Long> INVALIDATION_INTERVAL_MS =
      define(
          "scr.shim.invalidation.interval.ms",
          Long.class,
          200L,
          "How often registered replicas are checked against the DataNode's replica map; a"
              + " deleted, moved or re-stamped replica loses VALID within one interval plus one"
              + " scan.");

  /** Whether segments use memfd_create (sealed) when the kernel supports it. */
  public static final ConfigKey<Boolean> SHM_USE_MEMFD =
      define(
          "scr.shim.shm.memfd",
          Boolean.class,
          true,
          "Create segments with memfd_create (sealed against shrinking) when available; false"
              + " forces deleted files in scr.shim.shm.dir.");

  /** Directory for deleted-file segments when memfd is off or unavailable. */
  public static final ConfigKey<String> SHM_DIR =
      define(
          "scr.shim.shm.dir",
          String.class,
          "/dev/shm",
          "tmpfs directory for deleted-file segments when memfd is unavailable or disabled.");

  /** Whether the scr extensions (batched fd requests and releases) are offered. */
  public static final ConfigKey<Boolean> EXTENSIONS_ENABLED =
      define(
          "scr.shim.extensions.enabled",
          Boolean.class,
          true,
          "Offer the scr protocol extensions (batched fd requests and releases) to clients that"
              + " ask for them with op 127; stock clients never ask and never see them.");

  /**
   * Input a connection may buffer while its request is served, derived from {@link
   * #MAX_REQUEST_BYTES}: two largest requests. Stock and scr clients wait for each reply before the
   * next request on a connection (sending only a receipt byte meanwhile).
   */
  static int pendingInputLimit(int maxRequestBytes) {
    return (int) Math.min(Integer.MAX_VALUE, 2L * maxRequestBytes);
  }

  private ScrShimKeys() {}

  private static <T> ConfigKey<T> define(
      String name, Class<T> type, T defaultValue, String description) {
    ConfigKey<T> key =
        ConfigKey.newBuilder(name, type)
            .defaultValue(defaultValue)
            .description(description)
            .build();
    ALL.add(key);
    return key;
  }

  /** Every key, in catalogue order. */
  public static List<ConfigKey<?>> all() {
    return Collections.unmodifiableList(ALL);
  }
}
