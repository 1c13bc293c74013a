package io.scr.shim;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The epoll UNIX-socket server: binds the socket ({@code chmod 0666} as stock does, access control
 * being the directories' job), accepts connections and gives each a {@link ShimConnectionHandler}.
 * Owns its event loops ({@code scr-shim-io-*}), its workers ({@code scr-shim-worker-*}) and the
 * socket file; {@link #close()} releases all of them and every client segment.
 *
 * <p><b>The socket file changes hands atomically.</b> The server binds a name of its own in the
 * same directory ({@code .scr-shim-<pid>-<n>}) and renames it over the socket path: a DataNode that
 * starts while another (or a stale file) holds the path replaces it in one step, so clients see the
 * old socket or the new one, never no socket. On close it removes the socket path only while the
 * path is still the file it bound (same device and inode): a DataNode stopping after its successor
 * started leaves the successor's socket alone. (Netty's own close deletes the name it bound, which
 * the rename has already moved.)
 *
 * <p>Thread-safety: {@link #start} and {@link #close} are called by the plugin's control thread or
 * the DataNode's shutdown thread, never concurrently (the plugin serializes them).
 */
final class ShimServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShimServer.class);

  private final Path socketPath;
  private final ShimConfig config;
  private final ShortCircuitService service;
  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final ShimMetrics metrics;
  private final Ticker ticker;
  private EventLoopGroup group;
  private ThreadPoolExecutor workers;
  private ChannelGroup channels;
  private Channel serverChannel;

  /** The identity of the socket file this server bound, while it serves. */
  private Object boundFile;

  ShimServer(
      Path socketPath,
      ShimConfig config,
      ShortCircuitService service,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Ticker ticker) {
    this.socketPath = socketPath;
    this.ticker = ticker;
    this.config = config;
    this.service = service;
    this.registry = registry;
    this.limits = limits;
    this.metrics = metrics;
  }

  /** Binds and starts serving; on failure everything it started is released. */
  void start() throws IOException {
    if (!Epoll.isAvailable()) {
      throw new IOException(
          "Netty epoll is unavailable, so the scr shim cannot serve: "
              + Epoll.unavailabilityCause(),
          Epoll.unavailabilityCause());
    }
    if (FdPassing.unavailabilityCause() != null) {
      throw new IOException(
          "fd passing is unavailable: " + FdPassing.unavailabilityCause(),
          FdPassing.unavailabilityCause());
    }
    boolean ok = false;
    try {
      group =
          new EpollEventLoopGroup(config.ioThreads, new DefaultThreadFactory("scr-shim-io", true));
      workers =
          new ThreadPoolExecutor(
              config.workerThreads,
              config.workerThreads,
              30,
              TimeUnit.SECONDS,
              new ArrayBlockingQueue<>(config.workerQueue),
              new DefaultThreadFactory("scr-shim-worker", true));
      workers.allowCoreThreadTimeOut(true);
      channels = new DefaultChannelGroup("scr-shim", group.next());
      FdRequestRouting routing = FdRequestRouting.from(config, metrics, ticker);
      Path bindPath = bindPath();
      ServerBootstrap b =
          new ServerBootstrap()
              .group(group)
              .channel(EpollServerDomainSocketChannel.class)
              .option(ChannelOption.SO_BACKLOG, config.backlog)
              .handler(
                  new AcceptFailures(
                      metrics, () -> (int) metrics.liveConnections.sum(), config.maxConnections))
              .childHandler(
                  new ChannelInitializer<EpollDomainSocketChannel>() {
                    @Override
                    protected void initChannel(EpollDomainSocketChannel ch) {
                      channels.add(ch);
                      ch.pipeline()
                          .addLast(
                              new IdleStateHandler(
                                  config.idleTimeoutMs, 0, 0, TimeUnit.MILLISECONDS))
                          .addLast(
                              new ShimConnectionHandler(
                                  service,
                                  registry,
                                  limits,
                                  metrics,
                                  workers,
                                  config,
                                  routing,
                                  PeerIdentity.SO_PEERCRED,
                                  ticker));
                    }
                  });
      serverChannel =
          b.bind(new DomainSocketAddress(bindPath.toString())).syncUninterruptibly().channel();
      // Stock binds then chmods 0666: who may connect is decided by the directories above.
      Files.setPosixFilePermissions(bindPath, PosixFilePermissions.fromString("rw-rw-rw-"));
      if (!bindPath.equals(socketPath)) {
        Files.move(bindPath, socketPath, StandardCopyOption.ATOMIC_MOVE);
      }
      boundFile = fileKey(socketPath);
      LOG.info(
          "scr shim serving short-circuit reads on {} (backlog {}, {} io threads)",
          socketPath,
          config.backlog,
          config.ioThreads);
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
  }

  /**
   * The name to bind: {@code .scr-shim-<pid>-<n>} beside the socket path, renamed over it once
   * bound; the socket path itself (after removing what is there, as stock does) when that name
   * would not fit a UNIX socket address (then Netty's close removes the path whoever holds it).
   */
  private Path bindPath() throws IOException {
    if (Files.isDirectory(socketPath, LinkOption.NOFOLLOW_LINKS)) {
      throw new IOException(
          "the shim socket path " + socketPath + " is a directory; point it at a file name");
    }
    Path dir = socketPath.toAbsolutePath().getParent();
    Path own =
        dir.resolve(".scr-shim-" + ProcessHandle.current().pid() + "-" + SERVERS.incrementAndGet());
    Path bind =
        own.toString().getBytes(StandardCharsets.UTF_8).length < MAX_SOCKET_PATH ? own : socketPath;
    Files.deleteIfExists(bind); // a stale name of a process with this pid, or the previous socket
    return bind;
  }

  /** Servers started in this process: a bind name of its own for each (tests run several). */
  private static final AtomicInteger SERVERS = new AtomicInteger();

  private static long remainingMillis(long deadlineNanos) {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
  }

  /** sun_path holds 108 bytes with its terminating NUL. */
  private static final int MAX_SOCKET_PATH = 108;

  /** The file's identity (device and inode), or null when it does not exist. */
  private static Object fileKey(Path p) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
          .fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  Path socketPath() {
    return socketPath;
  }

  /** The event loops, while serving (for tests that must hold one up). */
  EventLoopGroup eventLoops() {
    return group;
  }

  /** How long {@link #close()} waits, in all, for the server's threads to finish their work. */
  static final long CLOSE_WAIT_MILLIS = 10_000;

  /**
   * Stops accepting, closes every connection (freeing their segments) and every thread. Waits at
   * most {@value #CLOSE_WAIT_MILLIS} ms in all: a thread stuck in the dataset (a storage call that
   * never returns, on a worker or an event loop serving an fd request) must not hold up the
   * DataNode's shutdown; it is left to end on its own (the threads are daemons), as stock leaves a
   * stuck transfer thread.
   */
  @Override
  public void close() {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MILLIS);
    if (serverChannel != null) {
      if (!serverChannel.close().awaitUninterruptibly(remainingMillis(deadline))) {
        LOG.warn(
            "scr shim socket {} did not close within {} ms (an event loop is stuck, likely in"
                + " the dataset); shutting down without it",
            socketPath,
            CLOSE_WAIT_MILLIS);
      }
      serverChannel = null;
    }
    if (channels != null) {
      channels.close().awaitUninterruptibly(remainingMillis(deadline));
      channels = null;
    }
    if (workers != null) {
      workers.shutdown();
      try {
        if (!workers.awaitTermination(remainingMillis(deadline), TimeUnit.MILLISECONDS)) {
          LOG.warn("scr shim workers did not stop within {} ms", CLOSE_WAIT_MILLIS);
          workers.shutdownNow();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (group != null) {
      group
          .shutdownGracefully(0, 5, TimeUnit.SECONDS)
          .awaitUninterruptibly(remainingMillis(deadline));
      group = null;
    }
    workers = null;
    // Replies abandoned during shutdown already freed theirs; free whatever a race left behind.
    for (SegmentRegistry.ShimSegment seg : registry.liveSegments()) {
      registry.remove(seg);
    }
    Object bound = boundFile;
    boundFile = null;
    if (bound == null) {
      return; // never bound it: whatever is at the path is someone else's
    }
    if (!bound.equals(fileKey(socketPath))) {
      LOG.info(
          "scr shim socket {} now belongs to another server (a DataNode started after this one);"
              + " left in place",
          socketPath);
      return;
    }
    try {
      Files.deleteIfExists(socketPath);
    } catch (IOException e) {
      LOG.warn("Could not remove the shim socket {}", socketPath, e);
    }
  }
}
