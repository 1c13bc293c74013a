package io.scr.shim;

import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.unix.Errors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shim's listening channel's first handler: says why accepting failed when the DataNode is at
 * its open-file limit ({@code accept(2)}: {@code EMFILE}, or {@code ENFILE} for the whole system).
 * Such a failure is counted ({@code rejections.accept_fd_limit}) and said in one WARN a minute with
 * the connections open and the remedy, and accepting pauses for {@link #PAUSE_MS} as Netty's own
 * acceptor would (the pending connection stays readable: retrying at once would spin). Without it
 * Netty logged each failure, once a second, as an exception that reached the end of the pipeline,
 * naming neither the cause nor the fix. Other failures go on to Netty's acceptor.
 *
 * <p>Thread-safety: runs on the listening channel's event loop only; the log is thread-safe.
 */
final class AcceptFailures extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(AcceptFailures.class);
  private static final ThrottledLog AT_FD_LIMIT = new ThrottledLog(Ticker.SYSTEM);

  /** How long accepting pauses after a failure (Netty's acceptor pauses as long). */
  static final long PAUSE_MS = 1000;

  private static final int ENFILE = 23;
  private static final int EMFILE = 24;

  private final ShimMetrics metrics;
  private final IntSupplier openConnections;
  private final int maxConnections;

  AcceptFailures(ShimMetrics metrics, IntSupplier openConnections, int maxConnections) {
    this.metrics = metrics;
    this.openConnections = openConnections;
    this.maxConnections = maxConnections;
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (!(cause instanceof Errors.NativeIoException)) {
      ctx.fireExceptionCaught(cause);
      return;
    }
    int errno = -((Errors.NativeIoException) cause).expectedErr();
    if (errno != EMFILE && errno != ENFILE) {
      ctx.fireExceptionCaught(cause);
      return;
    }
    metrics.reject(ShimMetrics.Rejection.ACCEPT_FD_LIMIT);
    AT_FD_LIMIT.warn(
        LOG,
        "The scr shim cannot accept connections: "
            + (errno == EMFILE
                ? "the DataNode is at its open-file limit (ulimit -n)"
                : "the system is at its open-file limit (fs.file-max)")
            + ", accept failed with "
            + cause.getMessage()
            + "; "
            + openConnections.getAsInt()
            + " connections are open to the shim ("
            + ScrShimKeys.MAX_CONNECTIONS
            + "="
            + maxConnections
            + "). New connections wait in the listen backlog ("
            + ScrShimKeys.SOCKET_BACKLOG
            + ") and clients' connects time out meanwhile. Raise the DataNode's open-file limit"
            + " well above "
            + ScrShimKeys.MAX_CONNECTIONS
            + " plus its own use, or find the local process holding connections (ss -xp)");
    ChannelConfig config = ctx.channel().config();
    if (config.isAutoRead()) {
      config.setAutoRead(false);
      ctx.executor()
          .schedule(
              () -> ctx.channel().config().setAutoRead(true), PAUSE_MS, TimeUnit.MILLISECONDS);
    }
  }
}
