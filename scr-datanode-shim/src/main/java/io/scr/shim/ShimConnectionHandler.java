package io.scr.shim;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.concurrent.ScheduledFuture;
import io.scr.shim.SegmentRegistry.ShimSegment;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: decodes DataTransferProtocol frames ({@code [version 28 as
 * short][op][varint length][protobuf]}), serves each request on its event loop (fd requests while
 * {@link FdRequestRouting} allows; segment requests and single releases always) or hands it to a
 * worker, sends the reply and its fds, and tracks what the connection is for.
 *
 * <p>States: READY (decode the next frame), BUSY (one request in flight; what arrives meanwhile
 * waits in the cumulation buffer, and more than twice the largest request closes the connection),
 * AWAIT_RECEIPT (the next byte is the receipt for passed fds), SHM (the connection carries a
 * segment: any byte or EOF frees it, stock semantics).
 *
 * <p>Concurrency: every field is confined to the channel's event loop; workers only build a {@link
 * Reply}, may send it themselves on their own duplicate of the socket fd (never through the
 * channel, which stays the event loop's; no other write can be in flight while the connection is
 * BUSY), and post it back with {@code eventLoop().execute}.
 */
final class ShimConnectionHandler extends ByteToMessageDecoder {
  private static final Logger LOG = LoggerFactory.getLogger(ShimConnectionHandler.class);
  private static final ThrottledLog WORKER_FAILURES = new ThrottledLog();
  private static final ThrottledLog WRITE_TIMEOUTS = new ThrottledLog();
  private static final ThrottledLog REFUSED_AT_ACCEPT = new ThrottledLog();
  private static final ThrottledLog REQUEST_TIMEOUTS = new ThrottledLog();
  private static final ThrottledLog PENDING_INPUT = new ThrottledLog();
  private static final AtomicBoolean NO_CREDENTIALS_LOGGED = new AtomicBoolean();
  private static final AtomicBoolean PID_NAMESPACE_LOGGED = new AtomicBoolean();
  static final int DATA_TRANSFER_VERSION = 28;

  /** Longest pause between attempts to pass fds through a full socket buffer. */
  private static final long FD_RETRY_MAX_MS = 64;

  private enum State {
    READY,
    BUSY,
    AWAIT_RECEIPT,
    SHM,
    CLOSED
  }

  private final ShortCircuitService service;
  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final ShimMetrics metrics;
  private final Executor workers;
  private final int maxRequestBytes;

  /**
   * Input a connection may have buffered while its request is served (BUSY): two largest requests.
   * Stock and scr clients wait for each reply before the next request on a connection (sending only
   * a receipt byte meanwhile).
   */
  private final int pendingInputLimit;

  private final long receiptTimeoutMs;
  private final long writeTimeoutMs;
  private final long requestTimeoutMs;

  /**
   * Whether op 87 is served here or on a worker ({@link ScrShimKeys#FD_REQUESTS_ON_EVENT_LOOP}).
   */
  private final FdRequestRouting routing;

  private final PeerIdentity.Lookup peers;

  private State state = State.READY;
  private int pid = -1;

  /** The key this connection's limits and segments are counted under ({@link PeerIdentity}). */
  private int client;

  private boolean counted;

  /** Whether the shim-wide connection count includes this connection. */
  private boolean accepted;

  /** Closes a connection whose request does not arrive in full in time; null when not armed. */
  private ScheduledFuture<?> requestTimer;

  private String overLimit;
  private ShimSegment segment;
  private Reply awaiting;
  private ScheduledFuture<?> receiptTimer;

  /** The reply being written (BUSY), and when it must be out or the connection closes. */
  private Reply writing;

  private ScheduledFuture<?> writeTimer;

  /** A connection with a routing of its own (tests that make handlers directly). */
  ShimConnectionHandler(
      ShortCircuitService service,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Executor workers,
      ShimConfig config,
      PeerIdentity.Lookup peers) {
    this(
        service,
        registry,
        limits,
        metrics,
        workers,
        config,
        FdRequestRouting.from(config, metrics),
        peers);
  }

  ShimConnectionHandler(
      ShortCircuitService service,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Executor workers,
      ShimConfig config,
      FdRequestRouting routing,
      PeerIdentity.Lookup peers) {
    this.peers = peers;
    this.service = service;
    this.registry = registry;
    this.limits = limits;
    this.metrics = metrics;
    this.workers = workers;
    this.maxRequestBytes = config.maxRequestBytes;
    this.pendingInputLimit = (int) Math.min(Integer.MAX_VALUE, 2L * config.maxRequestBytes);
    this.receiptTimeoutMs = config.receiptTimeoutMs;
    this.writeTimeoutMs = config.writeTimeoutMs;
    this.requestTimeoutMs = config.requestTimeoutMs;
    this.routing = routing;
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    metrics.liveConnections.increment();
    String full = limits.acceptConnection();
    if (full != null) {
      // As stock refuses a connection over dfs.datanode.max.transfer.threads: at once, unread.
      metrics.reject(ShimMetrics.Rejection.MAX_CONNECTIONS);
      REFUSED_AT_ACCEPT.warn(LOG, "Refused a scr shim connection: " + full);
      state = State.CLOSED;
      ctx.close();
      return;
    }
    accepted = true;
    PeerIdentity peer;
    try {
      peer = peers.of(ctx.channel());
    } catch (IOException | RuntimeException e) {
      // Fail closed: limits and segment ownership are keyed by the peer's credentials, so a
      // connection without them would share one anonymous quota (and its segments) with every
      // other such connection.
      if (NO_CREDENTIALS_LOGGED.compareAndSet(false, true)) {
        LOG.warn(
            "Refusing a scr shim connection whose peer credentials (SO_PEERCRED) cannot be read;"
                + " later ones are refused without this message and counted in"
                + " rejections.no_credentials",
            e);
      }
      metrics.reject(ShimMetrics.Rejection.NO_CREDENTIALS);
      state = State.CLOSED;
      ctx.close();
      return;
    }
    pid = peer.pid;
    client = peer.key();
    if (!peer.pidUsable() && PID_NAMESPACE_LOGGED.compareAndSet(false, true)) {
      LOG.warn(
          "A scr shim client's pid is not visible ({}; another pid namespace?): such clients are"
              + " limited per uid, every process of one uid sharing one client's quota. Logged"
              + " once.",
          peer);
    }
    overLimit = limits.openConnection(client, peer.uid);
    counted = overLimit == null;
    if (!counted) {
      metrics.reject(ShimMetrics.Rejection.CLIENT_CONNECTIONS);
      // It gets its refusal with its first request, but must send that soon: it counts toward
      // scr.shim.max.connections only, and must not hold a place there for the 60 s idle close.
      armRequestTimer(ctx);
    }
    super.channelActive(ctx);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    State was = state;
    state = State.CLOSED;
    metrics.liveConnections.decrement();
    if (accepted) {
      limits.releaseAccepted();
      accepted = false;
    }
    stopWriteTimer();
    stopRequestTimer();
    if (counted) {
      limits.closeConnection(client);
      counted = false;
    }
    if (was == State.AWAIT_RECEIPT) {
      receiptMissing("the connection closed before the receipt byte");
    }
    if (segment != null) {
      registry.remove(segment);
      segment = null;
    }
    super.channelInactive(ctx);
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
    if (evt instanceof IdleStateEvent && state == State.READY) {
      ctx.close(); // an idle request connection; shm connections never idle out
      return;
    }
    super.userEventTriggered(ctx, evt);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    LOG.debug("Closing scr shim connection of pid {}: {}", pid, cause.toString());
    ctx.close();
  }

  @Override
  protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    in.skipBytes(in.readableBytes()); // EOF mid-frame: stock drops the partial request too
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    while (in.isReadable()) {
      switch (state) {
        case BUSY:
          if (in.readableBytes() > pendingInputLimit) {
            // This limit is what bounds this DataNode's heap against a client that sends without
            // reading. Pausing reads while BUSY did not (netty's epoll transport went on reading:
            // 4 to 20 MB in the 1 s of ShimWriteDeadlineTest) and cost two epoll_ctl per request.
            PENDING_INPUT.warn(
                LOG,
                "Client pid "
                    + pid
                    + " sent more than "
                    + pendingInputLimit
                    + " bytes while its request was served (2 x "
                    + ScrShimKeys.MAX_REQUEST_BYTES
                    + "); closing the connection and releasing its reply's fds and slots");
            reject(ctx, in, ShimMetrics.Rejection.PENDING_INPUT);
          }
          return;
        case CLOSED:
          return;
        case SHM:
          // Stock: the DataNode's DomainSocketWatcher frees the segment on any input.
          metrics.reject(ShimMetrics.Rejection.DATA_ON_SHM_SOCKET);
          in.skipBytes(in.readableBytes());
          close(ctx);
          return;
        case AWAIT_RECEIPT:
          in.readByte(); // any value is a receipt, as in stock
          receiptArrived();
          state = State.READY;
          break;
        case READY:
          if (!decodeFrame(ctx, in)) {
            return;
          }
          break;
        default:
          throw new AssertionError(state);
      }
    }
  }

  /** Decodes one frame if complete; returns false to wait for more bytes or after closing. */
  private boolean decodeFrame(ChannelHandlerContext ctx, ByteBuf in) {
    int start = in.readerIndex();
    int avail = in.readableBytes();
    if (avail < 2) {
      armRequestTimer(ctx);
      return false;
    }
    int version = in.getShort(start);
    if (version != DATA_TRANSFER_VERSION) {
      LOG.debug("Version Mismatch (Expected: 28, Received: {} ) from pid {}", version, pid);
      reject(ctx, in, ShimMetrics.Rejection.BAD_VERSION);
      return false;
    }
    if (avail < 3) {
      armRequestTimer(ctx);
      return false;
    }
    int op = in.getUnsignedByte(start + 2);
    if (!service.isServedOp(op)) {
      LOG.debug("Unknown op {} from pid {}", op, pid);
      reject(ctx, in, ShimMetrics.Rejection.UNKNOWN_OP);
      return false;
    }
    long length = 0;
    int pos = start + 3;
    int shift = 0;
    while (true) {
      if (pos >= start + avail) {
        armRequestTimer(ctx);
        return false; // varint incomplete
      }
      int b = in.getUnsignedByte(pos++);
      length |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        break;
      }
      shift += 7;
      if (shift >= 35) {
        reject(ctx, in, ShimMetrics.Rejection.BAD_VARINT);
        return false;
      }
    }
    if (length > maxRequestBytes) {
      LOG.debug("Request of {} bytes from pid {} exceeds {}", length, pid, maxRequestBytes);
      reject(ctx, in, ShimMetrics.Rejection.OVERSIZED);
      return false;
    }
    int headerLength = pos - start;
    if (avail < headerLength + length) {
      armRequestTimer(ctx); // a frame begun must be complete within scr.shim.request.timeout.ms
      return false;
    }
    byte[] body = new byte[(int) length];
    in.skipBytes(headerLength);
    in.readBytes(body);
    dispatch(ctx, op, body);
    return true;
  }

  private void reject(ChannelHandlerContext ctx, ByteBuf in, ShimMetrics.Rejection why) {
    metrics.reject(why);
    in.skipBytes(in.readableBytes());
    close(ctx);
  }

  private void close(ChannelHandlerContext ctx) {
    if (state != State.CLOSED) {
      state = State.CLOSED;
    }
    ctx.close();
  }

  private void dispatch(ChannelHandlerContext ctx, int op, byte[] body) {
    stopRequestTimer();
    state = State.BUSY;
    if (overLimit != null) {
      send(ctx, service.limitReply(op, overLimit));
      return;
    }
    int client = this.client;
    long decoded = System.nanoTime();
    boolean epoll = ctx.channel() instanceof EpollDomainSocketChannel;
    if (epoll && op == ShortCircuitService.OP_REQUEST_FDS && routing.onEventLoop()) {
      routing.startOnEventLoop();
      Reply r = handle(op, body, client);
      r.decodedNanos = decoded;
      routing.servedOnEventLoop(System.nanoTime() - decoded, r);
      replyFromLoop(ctx, r);
      return;
    }
    if (epoll && service.servedInMemory(op)) {
      // Memory only, never storage or the dataset's lock: a memfd segment created, zero-filled
      // and mapped in tens of microseconds, or one slot released. Through a worker, the two
      // hand-offs cost more than the work (issue 16, session 10: op 89 took 0.5-1.2 ms at the
      // median on the workers, and a new client's first reads wait for its first segment).
      Reply r = handle(op, body, client);
      r.decodedNanos = decoded;
      replyFromLoop(ctx, r);
      return;
    }
    int socketFd = workerSocket(ctx);
    try {
      workers.execute(
          () -> {
            Reply r = handle(op, body, client);
            r.decodedNanos = decoded;
            if (socketFd >= 0) {
              try {
                sendDirect(socketFd, r);
              } finally {
                FdPassing.close(socketFd);
              }
            }
            try {
              ctx.channel().eventLoop().execute(() -> send(ctx, r));
            } catch (RejectedExecutionException shuttingDown) {
              r.abandon(registry);
            }
          });
    } catch (RejectedExecutionException e) {
      if (socketFd >= 0) {
        FdPassing.close(socketFd);
      }
      metrics.reject(ShimMetrics.Rejection.BUSY);
      close(ctx);
    }
  }

  /**
   * Sends {@code r}, built on this event loop, on the channel's own fd at once (no other thread can
   * close it while this loop runs); the rest of the send runs as this loop's next task, outside the
   * decode.
   */
  private void replyFromLoop(ChannelHandlerContext ctx, Reply r) {
    sendDirect(((EpollDomainSocketChannel) ctx.channel()).fd().intValue(), r);
    ctx.channel().eventLoop().execute(() -> send(ctx, r));
  }

  /** {@link ShortCircuitService#handle}, with a last guard: always returns a reply. */
  private Reply handle(int op, byte[] body, int client) {
    try {
      return service.handle(op, body, client);
    } catch (Throwable t) {
      // handle() answers every failure itself; this is the last guard. A task that ends without
      // posting a reply would leave the connection BUSY forever.
      metrics.reject(ShimMetrics.Rejection.INTERNAL_ERROR);
      WORKER_FAILURES.log(LOG, "scr shim worker failed op " + op + " for pid " + client, t);
      return Reply.closeOnly(ShimMetrics.OpKind.REQUEST_FDS, System.nanoTime());
    }
  }

  /**
   * A duplicate of the connection's socket fd for the worker to reply on ({@link #sendDirect}), or
   * -1 (not an epoll channel, or dup failed: the event loop sends). Taken on the event loop while
   * the channel is open; the worker closes it.
   */
  private static int workerSocket(ChannelHandlerContext ctx) {
    if (!(ctx.channel() instanceof EpollDomainSocketChannel) || !ctx.channel().isOpen()) {
      return -1;
    }
    try {
      return FdPassing.duplicate(((EpollDomainSocketChannel) ctx.channel()).fd().intValue());
    } catch (IOException | RuntimeException e) {
      LOG.debug("Replying from the event loop: {}", e.toString());
      return -1;
    }
  }

  /**
   * Sends {@code r} from the thread that built it (a worker, on its duplicate of the socket; or the
   * event loop, on the channel's fd, for {@link ScrShimKeys#FD_REQUESTS_ON_EVENT_LOOP}): the
   * response bytes, then the fds, each with one non-blocking call, so the client has its answer
   * without waiting for the event loop to take the reply (the second hand-off of every request, the
   * larger part of an op 87's time in the shim under load, issue 16). Stops at the first call the
   * socket does not take in full: the event loop sends the rest ({@link Reply#bytesSent}, the fds
   * still in the reply) with its deadline. Replies that change the connection (close it, carry a
   * segment) are left to the event loop. Never throws: a failed write marks the reply for the event
   * loop to abandon.
   */
  private void sendDirect(int socketFd, Reply r) {
    if (r.closeOnly || r.closeAfter || r.newSegment != null || r.shmFd != null) {
      return;
    }
    r.sendStartNanos = System.nanoTime();
    try {
      while (r.bytesSent < r.bytes.length) {
        int n = FdPassing.write(socketFd, r.bytes, r.bytesSent, r.bytes.length - r.bytesSent);
        if (n == 0) {
          return; // socket buffer full: the event loop writes the rest
        }
        r.bytesSent += n;
      }
      if (!r.streams.isEmpty()) {
        if (FdPassing.send(socketFd, r.fdNumbers(), r.dataByte) == FdPassing.WOULD_BLOCK) {
          return;
        }
        metrics.fdsPassed.add(r.fdCount());
        r.passedNanos = System.nanoTime();
        metrics.fdPhases(r, r.passedNanos);
        r.closeOwnCopies();
      } else {
        r.passedNanos = System.nanoTime();
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("Replying to pid {} from a worker failed: {}", pid, e.toString());
      r.sendFailed = true;
    }
  }

  private void send(ChannelHandlerContext ctx, Reply r) {
    safely(ctx, r, () -> sendReply(ctx, r));
  }

  /** Runs one event-loop step of sending {@code r}; a Throwable abandons the reply and closes. */
  private void safely(ChannelHandlerContext ctx, Reply r, Runnable step) {
    try {
      step.run();
    } catch (Throwable t) {
      // On the event loop an escaping Throwable would only be logged by netty, and the connection
      // would stay BUSY holding the reply's fds and slots: give them back and close instead.
      r.abandon(registry);
      close(ctx);
      metrics.reject(ShimMetrics.Rejection.INTERNAL_ERROR);
      WORKER_FAILURES.log(LOG, "scr shim failed sending a reply to pid " + pid, t);
    }
  }

  private void sendReply(ChannelHandlerContext ctx, Reply r) {
    if (r.sendStartNanos == 0) {
      r.sendStartNanos = System.nanoTime();
    }
    if (!ctx.channel().isActive()) {
      if (r.passedNanos != 0) {
        // The worker sent all of it before the connection closed: the request was answered, and
        // a receipt it asked for can no longer come (as if this loop had been awaiting it).
        metrics.request(r.op, r.status, r.passedNanos - r.receivedNanos());
        if (r.awaitReceipt) {
          metrics.reject(ShimMetrics.Rejection.RECEIPT_MISSING);
          LOG.info(
              "Client pid {}: the connection closed before the receipt byte; unregistering the"
                  + " slot",
              pid);
        }
      }
      r.abandon(registry);
      return;
    }
    if (r.closeOnly) {
      close(ctx);
      return;
    }
    if (r.sendFailed) {
      r.abandon(registry);
      close(ctx);
      return;
    }
    // The BUSY state's deadline: a client that stops reading must not keep this reply, its fds
    // and the connection forever (idle closes apply only in READY).
    if (r.bytesSent == r.bytes.length) {
      // The worker wrote the response, and passed the fds unless the socket was full.
      if (r.hasFds()) {
        writing = r;
        passFds(ctx, r, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(writeTimeoutMs), 1);
      } else {
        finish(ctx, r);
      }
      return;
    }
    int replyBytes = r.bytes.length - r.bytesSent;
    if (!limits.reserveReplyBytes(client, replyBytes)) {
      // This client already has scr.shim.client.max.pending.reply.bytes unread on other
      // connections: it is not reading, so this reply would only pin more of the heap.
      metrics.reject(ShimMetrics.Rejection.PENDING_REPLY_BYTES);
      WRITE_TIMEOUTS.warn(
          LOG,
          "Client pid "
              + pid
              + " has more than "
              + ScrShimKeys.CLIENT_MAX_PENDING_REPLY_BYTES
              + " of replies unread; closing this connection");
      r.abandon(registry);
      close(ctx);
      return;
    }
    writing = r;
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(writeTimeoutMs);
    ByteBuf buf = Unpooled.wrappedBuffer(r.bytes, r.bytesSent, replyBytes);
    ctx.writeAndFlush(buf)
        .addListener(
            f ->
                safely(
                    ctx,
                    r,
                    () -> {
                      limits.releaseReplyBytes(client, replyBytes);
                      if (!f.isSuccess()) {
                        r.abandon(registry);
                        close(ctx);
                      } else if (r.hasFds()) {
                        passFds(ctx, r, deadline, 1);
                      } else {
                        finish(ctx, r);
                      }
                    }));
    // Almost every reply is out (finished) by now: a timer is armed only for one that is not, so
    // the hot path schedules nothing. Blocked fd sends check the same deadline themselves.
    if (writing == r && writeTimer == null) {
      writeTimer =
          ctx.executor()
              .schedule(
                  () -> {
                    if (writing == r) {
                      writeTimedOut(ctx, r);
                    }
                  },
                  Math.max(0, deadline - System.nanoTime()),
                  TimeUnit.NANOSECONDS);
    }
  }

  /** Runs on the event loop once the response bytes are in the socket. */
  private void passFds(ChannelHandlerContext ctx, Reply r, long deadline, long retryMs) {
    if (!ctx.channel().isActive()) {
      r.abandon(registry);
      return;
    }
    int sent;
    try {
      int socketFd = ((EpollDomainSocketChannel) ctx.channel()).fd().intValue();
      sent = FdPassing.send(socketFd, r.fdNumbers(), r.dataByte);
    } catch (IOException e) {
      LOG.debug("Passing fds to pid {} failed: {}", pid, e.toString());
      r.abandon(registry);
      close(ctx);
      return;
    }
    if (sent == FdPassing.WOULD_BLOCK) {
      if (System.nanoTime() - deadline > 0) {
        writeTimedOut(ctx, r);
      } else {
        // Backing off: a client that does not drain its socket costs a wake-up every 64 ms, not
        // one per millisecond, until the write deadline closes it.
        long next = Math.min(retryMs * 2, FD_RETRY_MAX_MS);
        ctx.executor()
            .schedule(
                () -> safely(ctx, r, () -> passFds(ctx, r, deadline, next)),
                retryMs,
                TimeUnit.MILLISECONDS);
      }
      return;
    }
    metrics.fdsPassed.add(r.fdCount());
    r.passedNanos = System.nanoTime();
    metrics.fdPhases(r, r.passedNanos);
    r.closeOwnCopies();
    finish(ctx, r);
  }

  private void writeTimedOut(ChannelHandlerContext ctx, Reply r) {
    stopWriteTimer();
    metrics.reject(ShimMetrics.Rejection.WRITE_TIMEOUT);
    WRITE_TIMEOUTS.warn(
        LOG,
        "Client pid "
            + pid
            + " did not read its reply within "
            + ScrShimKeys.WRITE_TIMEOUT_MS
            + "="
            + writeTimeoutMs
            + " ms; closing the connection and releasing the reply's fds and slots");
    r.abandon(registry);
    close(ctx);
  }

  /**
   * Arms, once per request, the deadline for the request to arrive in full: without it a client
   * sending one byte every minute kept a partial frame (and its buffer) alive, resetting the idle
   * close with every byte.
   */
  private void armRequestTimer(ChannelHandlerContext ctx) {
    if (requestTimer != null || state == State.CLOSED) {
      return;
    }
    requestTimer =
        ctx.executor()
            .schedule(
                () -> {
                  requestTimer = null;
                  if (state == State.READY) {
                    metrics.reject(ShimMetrics.Rejection.REQUEST_TIMEOUT);
                    REQUEST_TIMEOUTS.warn(
                        LOG,
                        "Client pid "
                            + pid
                            + " did not send a complete request within "
                            + ScrShimKeys.REQUEST_TIMEOUT_MS
                            + "="
                            + requestTimeoutMs
                            + " ms; closing the connection");
                    close(ctx);
                  }
                },
                requestTimeoutMs,
                TimeUnit.MILLISECONDS);
  }

  private void stopRequestTimer() {
    if (requestTimer != null) {
      requestTimer.cancel(false);
      requestTimer = null;
    }
  }

  private void stopWriteTimer() {
    writing = null;
    if (writeTimer != null) {
      writeTimer.cancel(false);
      writeTimer = null;
    }
  }

  private void finish(ChannelHandlerContext ctx, Reply r) {
    stopWriteTimer();
    // Until the client had its answer (fds passed), not until this event loop got round to it.
    long end = r.passedNanos != 0 ? r.passedNanos : System.nanoTime();
    metrics.request(r.op, r.status, end - r.receivedNanos());
    if (!r.awaitReceipt) {
      r.done(r.status == org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS);
    }
    if (r.closeAfter) {
      close(ctx);
      return;
    }
    if (r.newSegment != null) {
      segment = r.newSegment;
      r.newSegment = null;
      state = State.SHM;
    } else if (r.awaitReceipt) {
      state = State.AWAIT_RECEIPT;
      awaiting = r;
      receiptTimer =
          ctx.executor()
              .schedule(
                  () -> {
                    if (state == State.AWAIT_RECEIPT) {
                      receiptMissing("no receipt byte within " + receiptTimeoutMs + " ms");
                      close(ctx);
                    }
                  },
                  receiptTimeoutMs,
                  TimeUnit.MILLISECONDS);
    } else {
      state = State.READY;
    }
    // Bytes that arrived while busy are still in the cumulation buffer: decode them now.
    try {
      channelRead(ctx, Unpooled.EMPTY_BUFFER);
    } catch (Exception e) {
      exceptionCaught(ctx, e);
    }
  }

  private void receiptArrived() {
    if (receiptTimer != null) {
      receiptTimer.cancel(false);
      receiptTimer = null;
    }
    if (awaiting != null) {
      awaiting.done(true);
    }
    awaiting = null;
  }

  private void receiptMissing(String why) {
    metrics.reject(ShimMetrics.Rejection.RECEIPT_MISSING);
    if (receiptTimer != null) {
      receiptTimer.cancel(false);
      receiptTimer = null;
    }
    Reply r = awaiting;
    awaiting = null;
    if (r != null) {
      LOG.info("Client pid {}: {}; unregistering the slot", pid, why);
      r.runOnFailure();
      r.done(false);
    }
  }
}
