package io.scr.shim;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a decoded request is served and who sends its reply first: on the connection's event loop
 * (fd requests while {@link FdRequestRouting} allows, and the requests served from memory alone:
 * segments, single releases, liveness probes) or on a worker, which sends the reply on its own
 * duplicate of the socket fd ({@link DirectReplyWriter}). Either way the rest of the reply (and the
 * connection's next state) is the event loop's, through the connection's {@link ReplyWriter}.
 *
 * <p>Thread-safety: stateless; every field is final and thread-safe. A request handed to a worker
 * carries copies of what it needs (op, body, client key, pid, the socket fd's duplicate, the
 * connection's writer) and posts its reply back with {@code eventLoop().execute}, which publishes
 * it to the loop.
 */
final class RequestRunner {
  private static final Logger LOG = LoggerFactory.getLogger(ShimConnectionHandler.class);
  private static final ThrottledLog WORKER_FAILURES = new ThrottledLog(Ticker.SYSTEM);

  private final ShortCircuitService service;
  private final SegmentRegistry registry;
  private final ShimMetrics metrics;
  private final Executor workers;
  private final Ticker ticker;
  private final DirectReplyWriter direct;

  /**
   * Whether op 87 is served here or on a worker ({@link ScrShimKeys#FD_REQUESTS_ON_EVENT_LOOP}).
   */
  private final FdRequestRouting routing;

  RequestRunner(
      ShortCircuitService service,
      SegmentRegistry registry,
      ShimMetrics metrics,
      Executor workers,
      FdRequestRouting routing,
      Ticker ticker) {
    this.service = service;
    this.registry = registry;
    this.metrics = metrics;
    this.workers = workers;
    this.routing = routing;
    this.ticker = ticker;
    this.direct = new DirectReplyWriter(metrics, ticker);
  }

  /**
   * Serves {@code op} for the connection of {@code ctx}, called on its event loop.
   *
   * @return false when the workers refused the request (counted as BUSY): the caller closes the
   *     connection
   */
  boolean run(
      ChannelHandlerContext ctx, int op, byte[] body, int client, int pid, ReplyWriter writer) {
    long decoded = ticker.read();
    boolean epoll = ctx.channel() instanceof EpollDomainSocketChannel;
    if (epoll && op == ShortCircuitService.OP_REQUEST_FDS && routing.onEventLoop()) {
      routing.startOnEventLoop();
      Reply r = handle(op, body, client, decoded);
      routing.servedOnEventLoop(ticker.read() - decoded, r);
      replyFromLoop(ctx, r, pid, writer);
      return true;
    }
    if (epoll && service.servedInMemory(op, body)) {
      // Memory only, never storage, the dataset's lock or the workers: a memfd segment created,
      // zero-filled and mapped in tens of microseconds, one slot released, or a liveness probe.
      // Through a worker, the two hand-offs cost more than the work (op 89 took 0.5-1.2 ms at
      // the median on the workers, and a new client's first reads wait for its first segment),
      // and a probe would measure the workers instead of this loop.
      replyFromLoop(ctx, handle(op, body, client, decoded), pid, writer);
      return true;
    }
    int socketFd = DirectReplyWriter.duplicate(ctx.channel());
    try {
      workers.execute(
          () -> {
            // Runs on a worker: reads only its arguments and this runner's final fields.
            Reply r = handle(op, body, client, decoded);
            DirectReplyWriter.Progress done = DirectReplyWriter.Progress.NONE;
            if (socketFd >= 0) {
              try {
                done = direct.send(socketFd, r, pid);
              } finally {
                FdPassing.close(socketFd);
              }
            }
            DirectReplyWriter.Progress sent = done;
            try {
              ctx.channel().eventLoop().execute(() -> writer.send(r, sent));
            } catch (RejectedExecutionException shuttingDown) {
              r.abandon(registry);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      if (socketFd >= 0) {
        FdPassing.close(socketFd);
      }
      metrics.reject(ShimMetrics.Rejection.BUSY);
      return false;
    }
  }

  /**
   * Sends {@code r}, built on this event loop, on the channel's own fd at once (no other thread can
   * close it while this loop runs); the rest of the send runs as this loop's next task, outside the
   * decode.
   */
  private void replyFromLoop(ChannelHandlerContext ctx, Reply r, int pid, ReplyWriter writer) {
    DirectReplyWriter.Progress done =
        direct.send(((EpollDomainSocketChannel) ctx.channel()).fd().intValue(), r, pid);
    ctx.channel().eventLoop().execute(() -> writer.send(r, done));
  }

  /**
   * {@link ShortCircuitService#handle}, with a last guard: always returns a reply. Runs on the
   * event loop or a worker; touches no field but the final ones.
   */
  private Reply handle(int op, byte[] body, int clientKey, long decoded) {
    try {
      return service.handle(op, body, clientKey, decoded);
    } catch (Throwable t) {
      // handle() answers every failure itself; this is the last guard. A task that ends without
      // posting a reply would leave the connection BUSY forever.
      metrics.reject(ShimMetrics.Rejection.INTERNAL_ERROR);
      WORKER_FAILURES.log(LOG, "scr shim worker failed op " + op + " for client " + clientKey, t);
      return service.internalError();
    }
  }
}
