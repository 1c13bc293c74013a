package io.scr.shim;

import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends a reply from the thread that built it, before the connection's event loop takes it back:
 * the response bytes, then the fds, each with one non-blocking call on a socket fd, so the client
 * has its answer without waiting for the event loop (the second hand-off of a request served on a
 * worker, the larger part of an op 87's time in the shim under load). Stops at the first call the
 * socket does not take in full; the event loop's {@link ReplyWriter} sends the rest from the {@link
 * Progress} it is handed.
 *
 * <p>Thread-safe: stateless. The socket fd is the caller's: on a worker its own duplicate ({@link
 * #duplicate}, taken on the event loop while the channel was open, closed by the worker after the
 * send), on the event loop the channel's own fd. The connection's state is not touched here: no
 * other write can be in flight while the connection is BUSY, and the worker posts the reply and its
 * {@link Progress} to the event loop afterwards, which is what publishes them there.
 */
final class DirectReplyWriter {
  private static final Logger LOG = LoggerFactory.getLogger(DirectReplyWriter.class);

  /** How far a direct send got. Immutable. */
  static final class Progress {
    /** Nothing sent (a reply left to the event loop). */
    static final Progress NONE = new Progress(0, false, 0, 0, false);

    /** Response bytes written. */
    final int bytesSent;

    /** Whether the fds were passed (and the shim's copies closed). */
    final boolean fdsPassed;

    /** When the send began; 0 if it did not. */
    final long sendStartNanos;

    /** When the client had the whole reply (bytes and fds); 0 if it does not yet. */
    final long passedNanos;

    /** A write failed (the peer is gone): the event loop abandons the reply and closes. */
    final boolean failed;

    Progress(
        int bytesSent, boolean fdsPassed, long sendStartNanos, long passedNanos, boolean failed) {
      this.bytesSent = bytesSent;
      this.fdsPassed = fdsPassed;
      this.sendStartNanos = sendStartNanos;
      this.passedNanos = passedNanos;
      this.failed = failed;
    }
  }

  private final ShimMetrics metrics;
  private final Ticker ticker;

  DirectReplyWriter(ShimMetrics metrics, Ticker ticker) {
    this.metrics = metrics;
    this.ticker = ticker;
  }

  /**
   * A duplicate of {@code channel}'s socket fd for a worker to reply on, or -1 (not an epoll
   * channel, or dup failed: the event loop sends). Call on the event loop while the channel is
   * open; the caller closes it ({@link FdPassing#close}).
   */
  static int duplicate(Channel channel) {
    if (!(channel instanceof EpollDomainSocketChannel) || !channel.isOpen()) {
      return -1;
    }
    try {
      return FdPassing.duplicate(((EpollDomainSocketChannel) channel).fd().intValue());
    } catch (IOException | RuntimeException e) {
      LOG.debug("Replying from the event loop: {}", e.toString());
      return -1;
    }
  }

  /**
   * Sends what of {@code r} the socket takes at once. Replies that change the connection (close it,
   * carry a segment) are left to the event loop ({@link Progress#NONE}). Never throws: a failed
   * write is a {@link Progress#failed} progress. {@code pid} is for the log only.
   */
  Progress send(int socketFd, Reply r, int pid) {
    if (r.closeOnly || r.closeAfter || r.shmFd != null) {
      return Progress.NONE;
    }
    long sendStart = ticker.read();
    int sent = 0;
    try {
      while (sent < r.bytes.length) {
        int n = FdPassing.write(socketFd, r.bytes, sent, r.bytes.length - sent);
        if (n == 0) {
          // socket buffer full: the event loop writes the rest
          return new Progress(sent, false, sendStart, 0, false);
        }
        sent += n;
      }
      if (r.streams.isEmpty()) {
        return new Progress(sent, false, sendStart, ticker.read(), false);
      }
      if (FdPassing.send(socketFd, r.fdNumbers(), r.dataByte) == FdPassing.WOULD_BLOCK) {
        return new Progress(sent, false, sendStart, 0, false);
      }
      long passed = ticker.read();
      metrics.fdsPassed.add(r.fdCount());
      metrics.fdPhases(r, sendStart, passed);
      r.closeOwnCopies();
      return new Progress(sent, true, sendStart, passed, false);
    } catch (IOException e) {
      if (!ReplyWriter.inFlightLimit(metrics, pid, e)) {
        LOG.debug("Replying to pid {} directly failed: {}", pid, e.toString());
      }
      return new Progress(sent, false, sendStart, 0, true);
    } catch (RuntimeException e) {
      LOG.debug("Replying to pid {} directly failed: {}", pid, e.toString());
      return new Progress(sent, false, sendStart, 0, true);
    }
  }
}
