package io.scr.shim;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends one connection's replies on its event loop: what a {@link DirectReplyWriter} left of the
 * response bytes (through the channel, so a client that does not read is bounded by the write
 * deadline and {@link ScrShimKeys#CLIENT_MAX_PENDING_REPLY_BYTES}), then the fds (retried with
 * backoff while the socket buffer is full), then tells the connection ({@link Connection#written}).
 * A reply that cannot complete (the peer is gone, the deadline passed, a failure) is abandoned: its
 * fds closed, its slots and segment given back, and the connection closed.
 *
 * <p>Concurrency: confined to the connection's event loop (every method, timer and listener runs
 * there); one reply is in flight at a time (the connection is BUSY).
 */
final class ReplyWriter {
  private static final Logger LOG = LoggerFactory.getLogger(ReplyWriter.class);
  private static final ThrottledLog FAILURES = new ThrottledLog(Ticker.SYSTEM);
  private static final ThrottledLog WRITE_TIMEOUTS = new ThrottledLog(Ticker.SYSTEM);
  private static final ThrottledLog IN_FLIGHT_LIMIT = new ThrottledLog(Ticker.SYSTEM);

  /** Longest pause between attempts to pass fds through a full socket buffer. */
  private static final long FD_RETRY_MAX_MS = 64;

  /** What the connection does when a reply is out, or must be given up. */
  interface Connection {
    /** The whole reply reached the client (its fds at {@code passedNanos}, or now if 0). */
    void written(Reply r, long passedNanos);

    /** Close the connection (the reply has been abandoned). */
    void close();
  }

  private final ChannelHandlerContext ctx;
  private final Connection connection;
  private final SegmentRegistry registry;
  private final ClientLimits limits;
  private final ShimMetrics metrics;
  private final Ticker ticker;
  private final long writeTimeoutMs;
  private final int client;
  private final int pid;

  /** The reply being written, whose deadline {@link #writeTimer} enforces; null when none. */
  private Reply writing;

  private ScheduledFuture<?> writeTimer;

  ReplyWriter(
      ChannelHandlerContext ctx,
      Connection connection,
      SegmentRegistry registry,
      ClientLimits limits,
      ShimMetrics metrics,
      Ticker ticker,
      long writeTimeoutMs,
      int client,
      int pid) {
    this.ctx = ctx;
    this.connection = connection;
    this.registry = registry;
    this.limits = limits;
    this.metrics = metrics;
    this.ticker = ticker;
    this.writeTimeoutMs = writeTimeoutMs;
    this.client = client;
    this.pid = pid;
  }

  /** Sends the rest of {@code r}, of which {@code done} was sent directly. */
  void send(Reply r, DirectReplyWriter.Progress done) {
    safely(r, () -> sendRest(r, done));
  }

  /** Stops the write deadline (the reply is out, or the connection closed). */
  void stop() {
    writing = null;
    if (writeTimer != null) {
      writeTimer.cancel(false);
      writeTimer = null;
    }
  }

  /** Runs one step of sending {@code r}; a Throwable abandons the reply and closes. */
  private void safely(Reply r, Runnable step) {
    try {
      step.run();
    } catch (Throwable t) {
      // On the event loop an escaping Throwable would only be logged by netty, and the connection
      // would stay BUSY holding the reply's fds and slots: give them back and close instead.
      r.abandon(registry);
      connection.close();
      metrics.reject(ShimMetrics.Rejection.INTERNAL_ERROR);
      FAILURES.log(LOG, "scr shim failed sending a reply to pid " + pid, t);
    }
  }

  private void sendRest(Reply r, DirectReplyWriter.Progress done) {
    long sendStart = done.sendStartNanos != 0 ? done.sendStartNanos : ticker.read();
    if (!ctx.channel().isActive()) {
      if (done.passedNanos != 0) {
        // The reply went out directly before the connection closed: the request was answered, and
        // a receipt it asked for can no longer come (as if this loop had been awaiting it).
        metrics.request(r.op, r.status, done.passedNanos - r.receivedNanos());
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
      connection.close();
      return;
    }
    if (done.failed) {
      r.abandon(registry);
      connection.close();
      return;
    }
    // The BUSY state's deadline: a client that stops reading must not keep this reply, its fds
    // and the connection forever (idle closes apply only in READY).
    long deadline = ticker.read() + TimeUnit.MILLISECONDS.toNanos(writeTimeoutMs);
    if (done.bytesSent == r.bytes.length) {
      // The response is out, and the fds too unless the socket was full.
      if (r.hasFds() && !done.fdsPassed) {
        writing = r;
        passFds(r, sendStart, deadline, 1);
      } else {
        finish(r, done.passedNanos);
      }
      return;
    }
    int replyBytes = r.bytes.length - done.bytesSent;
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
      connection.close();
      return;
    }
    writing = r;
    ByteBuf buf = Unpooled.wrappedBuffer(r.bytes, done.bytesSent, replyBytes);
    ctx.writeAndFlush(buf)
        .addListener(
            f ->
                safely(
                    r,
                    () -> {
                      limits.releaseReplyBytes(client, replyBytes);
                      if (!f.isSuccess()) {
                        r.abandon(registry);
                        connection.close();
                      } else if (r.hasFds()) {
                        passFds(r, sendStart, deadline, 1);
                      } else {
                        finish(r, 0);
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
                      writeTimedOut(r);
                    }
                  },
                  Math.max(0, deadline - ticker.read()),
                  TimeUnit.NANOSECONDS);
    }
  }

  /** Passes {@code r}'s fds once its response bytes are in the socket. */
  private void passFds(Reply r, long sendStart, long deadline, long retryMs) {
    if (!ctx.channel().isActive()) {
      r.abandon(registry);
      return;
    }
    int sent;
    try {
      int socketFd = ((EpollDomainSocketChannel) ctx.channel()).fd().intValue();
      sent = FdPassing.send(socketFd, r.fdNumbers(), r.dataByte);
    } catch (IOException e) {
      if (!inFlightLimit(metrics, pid, e)) {
        LOG.debug("Passing fds to pid {} failed: {}", pid, e.toString());
      }
      r.abandon(registry);
      connection.close();
      return;
    }
    if (sent == FdPassing.WOULD_BLOCK) {
      if (ticker.read() - deadline > 0) {
        writeTimedOut(r);
      } else {
        // Backing off: a client that does not drain its socket costs a wake-up every 64 ms, not
        // one per millisecond, until the write deadline closes it.
        long next = Math.min(retryMs * 2, FD_RETRY_MAX_MS);
        ctx.executor()
            .schedule(
                () -> safely(r, () -> passFds(r, sendStart, deadline, next)),
                retryMs,
                TimeUnit.MILLISECONDS);
      }
      return;
    }
    metrics.fdsPassed.add(r.fdCount());
    long passed = ticker.read();
    metrics.fdPhases(r, sendStart, passed);
    r.closeOwnCopies();
    finish(r, passed);
  }

  /**
   * Counts and says (one WARN a minute) a pass refused because the DataNode user's fds in flight
   * exceed its open-file limit ({@link FdPassing.InFlightLimitException}); false for any other
   * failure. Without this a well-behaved client got its reply and then the end of the stream, and
   * the DataNode logged nothing above DEBUG.
   */
  static boolean inFlightLimit(ShimMetrics metrics, int pid, IOException e) {
    if (!(e instanceof FdPassing.InFlightLimitException)) {
      return false;
    }
    metrics.reject(ShimMetrics.Rejection.INFLIGHT_FDS);
    IN_FLIGHT_LIMIT.warn(
        LOG,
        "Could not pass fds to client pid " + pid + "; closing its connection: " + e.getMessage());
    return true;
  }

  private void writeTimedOut(Reply r) {
    stop();
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
    connection.close();
  }

  private void finish(Reply r, long passedNanos) {
    stop();
    connection.written(r, passedNanos);
  }
}
