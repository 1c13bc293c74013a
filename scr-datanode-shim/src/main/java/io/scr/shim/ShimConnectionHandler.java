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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: admits it (per-client and shim-wide limits, peer credentials), decodes its
 * request frames ({@link RequestFrames}), tracks what the connection is for (its states and their
 * timers: the request deadline, the receipt deadline) and closes or lingers it. Where a request is
 * served and who sends its reply first is {@link RequestRunner}'s; {@link ReplyWriter} sends the
 * rest of a reply and reports it {@linkplain #written written}.
 *
 * <p>States: READY (decode the next frame), BUSY (one request in flight; what arrives meanwhile
 * waits in the cumulation buffer, and more than twice the largest request closes the connection),
 * AWAIT_RECEIPT (the next byte is the receipt for passed fds), SHM (the connection carries a
 * segment: any byte or EOF frees it, stock semantics), CLOSED (closing, or lingering until the peer
 * has read the fds passed to it: {@link #close}).
 *
 * <p>Concurrency: every instance field is confined to the channel's event loop (the static logs and
 * flags are thread-safe, shared by every connection). A request served on a worker reads none of
 * them: {@link RequestRunner} hands it copies, and its reply comes back to this loop through the
 * connection's {@link ReplyWriter} (no other write can be in flight while the connection is BUSY).
 */
final class ShimConnectionHandler extends ByteToMessageDecoder {
  private static final Logger LOG = LoggerFactory.getLogger(ShimConnectionHandler.class);
  private static final ThrottledLog REFUSED_AT_ACCEPT = new ThrottledLog(Ticker.SYSTEM);
  private static final ThrottledLog REQUEST_TIMEOUTS = new ThrottledLog(Ticker.SYSTEM);
  private static final ThrottledLog PENDING_INPUT = new ThrottledLog(Ticker.SYSTEM);
  private static final AtomicBoolean NO_CREDENTIALS_LOGGED = new AtomicBoolean();
  private static final AtomicBoolean PID_NAMESPACE_LOGGED = new AtomicBoolean();

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
  private final Ticker ticker;

  /** Where each request is served and who sends its reply first. */
  private final RequestRunner runner;

  private final int maxRequestBytes;

  /** Input a connection may have buffered while its request is served (BUSY). */
  private final int pendingInputLimit;

  private final long receiptTimeoutMs;
  private final long writeTimeoutMs;
  private final long requestTimeoutMs;

  private final PeerIdentity.Lookup peers;

  private State state = State.READY;
  private int pid = -1;

  /** The key this connection's limits and segments are counted under ({@link PeerIdentity}). */
  private int client;

  private boolean counted;

  /** Whether the shim-wide connection count includes this connection. */
  private boolean accepted;

  /** Sends this connection's replies; null until the peer is known. */
  private ReplyWriter writer;

  /** Closes a connection whose request does not arrive in full in time; null when not armed. */
  private ScheduledFuture<?> requestTimer;

  private String overLimit;

  /** Whether fds (a segment, a replica's) were passed on this connection. */
  private boolean passedFds;

  /**
   * Closed for requests, its output shut down, but its socket kept open (and counted) until the
   * peer reads what it was sent or closes: see {@link #close}.
   */
  private boolean lingering;

  private ShimSegment segment;
  private Reply awaiting;
  private ScheduledFuture<?> receiptTimer;

  /** A connection with a routing of its own (tests that make handlers directly). */
  ShimConnectionHandler(
      ShortCircuitService service,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Executor workers,
      ShimConfig config,
      PeerIdentity.Lookup peers,
      Ticker ticker) {
    this(
        service,
        registry,
        limits,
        metrics,
        workers,
        config,
        FdRequestRouting.from(config, metrics, ticker),
        peers,
        ticker);
  }

  ShimConnectionHandler(
      ShortCircuitService service,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Executor workers,
      ShimConfig config,
      FdRequestRouting routing,
      PeerIdentity.Lookup peers,
      Ticker ticker) {
    this.peers = peers;
    this.service = service;
    this.registry = registry;
    this.limits = limits;
    this.metrics = metrics;
    this.ticker = ticker;
    this.runner = new RequestRunner(service, registry, metrics, workers, routing, ticker);
    this.maxRequestBytes = config.maxRequestBytes;
    this.pendingInputLimit = config.pendingInputLimit;
    this.receiptTimeoutMs = config.receiptTimeoutMs;
    this.writeTimeoutMs = config.writeTimeoutMs;
    this.requestTimeoutMs = config.requestTimeoutMs;
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
    writer =
        new ReplyWriter(
            ctx,
            new ReplyWriter.Connection() {
              @Override
              public void written(Reply r, long passedNanos) {
                ShimConnectionHandler.this.written(ctx, r, passedNanos);
              }

              @Override
              public void close() {
                ShimConnectionHandler.this.close(ctx);
              }
            },
            registry,
            limits,
            metrics,
            ticker,
            writeTimeoutMs,
            client,
            pid);
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
    if (writer != null) {
      writer.stop();
    }
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
      close(ctx); // an idle request connection; shm connections never idle out
      return;
    }
    if (evt instanceof IdleStateEvent && lingering && unreadByPeer(ctx) == 0) {
      ctx.close(); // the peer read everything and its fds with it, but did not close
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
          in.skipBytes(in.readableBytes()); // a lingering connection ignores what it is sent
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
    RequestFrames.Header h = RequestFrames.peek(in, service::isServedOp, maxRequestBytes);
    switch (h.kind) {
      case INCOMPLETE:
        // a frame begun must be complete within scr.shim.request.timeout.ms
        armRequestTimer(ctx);
        return false;
      case BAD_VERSION:
        LOG.debug(
            "Version Mismatch (Expected: {}, Received: {} ) from pid {}",
            RequestFrames.DATA_TRANSFER_VERSION,
            h.version,
            pid);
        reject(ctx, in, ShimMetrics.Rejection.BAD_VERSION);
        return false;
      case UNKNOWN_OP:
        LOG.debug("Unknown op {} from pid {}", h.op, pid);
        reject(ctx, in, ShimMetrics.Rejection.UNKNOWN_OP);
        return false;
      case BAD_VARINT:
        reject(ctx, in, ShimMetrics.Rejection.BAD_VARINT);
        return false;
      case OVERSIZED:
        LOG.debug("Request of {} bytes from pid {} exceeds {}", h.length, pid, maxRequestBytes);
        reject(ctx, in, ShimMetrics.Rejection.OVERSIZED);
        return false;
      case COMPLETE:
        byte[] body = new byte[(int) h.length];
        in.skipBytes(h.headerLength);
        in.readBytes(body);
        dispatch(ctx, h.op, body);
        return true;
      default:
        throw new AssertionError(h.kind);
    }
  }

  private void reject(ChannelHandlerContext ctx, ByteBuf in, ShimMetrics.Rejection why) {
    metrics.reject(why);
    in.skipBytes(in.readableBytes());
    close(ctx);
  }

  /**
   * Closes the connection, unless fds passed on it may still sit unread in the peer's receive
   * queue. Fds in flight are charged to the DataNode's user until the peer reads them or closes its
   * end, and a user with more in flight than its open-file limit cannot pass any fd ({@code
   * ETOOMANYREFS}): a process that asked for a segment on each of thousands of connections and
   * never read, which the shim then closed (more input on a segment connection frees the segment),
   * had every later fd pass to every client of this DataNode fail. Such a connection lingers
   * instead: its segment is freed and its output shut down (the peer reads its replies, then the
   * end of the stream), but its socket stays open and counted against its process's and user's
   * connection quotas until the peer closes (or reads everything and idles), so what one process
   * can pin in flight is bounded by {@code scr.shim.client.max.connections}.
   */
  private void close(ChannelHandlerContext ctx) {
    state = State.CLOSED;
    if (lingering) {
      return;
    }
    if (passedFds && unreadByPeer(ctx) > 0) {
      lingering = true;
      stopRequestTimer();
      if (writer != null) {
        writer.stop();
      }
      if (segment != null) {
        registry.remove(segment);
        segment = null;
      }
      ((EpollDomainSocketChannel) ctx.channel()).shutdownOutput();
      return;
    }
    ctx.close();
  }

  /** {@link FdPassing#unreadByPeer} of this connection's socket, or -1 if not an open one. */
  private static int unreadByPeer(ChannelHandlerContext ctx) {
    if (!(ctx.channel() instanceof EpollDomainSocketChannel) || !ctx.channel().isOpen()) {
      return -1;
    }
    return FdPassing.unreadByPeer(((EpollDomainSocketChannel) ctx.channel()).fd().intValue());
  }

  private void dispatch(ChannelHandlerContext ctx, int op, byte[] body) {
    stopRequestTimer();
    state = State.BUSY;
    if (overLimit != null) {
      writer.send(service.limitReply(op, overLimit), DirectReplyWriter.Progress.NONE);
      return;
    }
    if (!runner.run(ctx, op, body, client, pid, writer)) {
      close(ctx);
    }
  }

  /** The whole of {@code r} reached the client: book it and move to the connection's next state. */
  private void written(ChannelHandlerContext ctx, Reply r, long passedNanos) {
    // Until the client had its answer (fds passed), not until this event loop got round to it.
    long end = passedNanos != 0 ? passedNanos : ticker.read();
    metrics.request(r.op, r.status, end - r.receivedNanos());
    passedFds |= r.hasFds();
    if (!r.awaitReceipt) {
      r.done(r.status == Status.SUCCESS);
    }
    if (r.closeAfter) {
      close(ctx);
      return;
    }
    ShimSegment carried = r.takeSegment();
    if (carried != null) {
      segment = carried;
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
