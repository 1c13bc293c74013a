package io.scr.shim;

import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shm.SharedMemoryFd;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a request produced: the response bytes, the fds to pass after them, and what the connection
 * does next. Built on a worker thread, which may also send it (response and fds) when the socket
 * takes it at once, then handed to the connection's event loop, which alone touches it from then
 * on.
 *
 * <p>fd ownership: the reply owns {@code streams} and {@code shmFd}; {@link #closeOwnCopies()}
 * closes them exactly once, after the {@code sendmsg} (the peer has its own duplicates) or when the
 * reply is abandoned.
 */
final class Reply {
  private static final Logger LOG = LoggerFactory.getLogger(Reply.class);

  final ShimMetrics.OpKind op;
  final Status status;
  final byte[] bytes;
  final long startNanos;
  final List<FileInputStream> streams = new ArrayList<>();

  /** Give back the fd reservations of {@link #streams}; run once, when they are closed. */
  final List<Runnable> fdReleases = new ArrayList<>();

  SharedMemoryFd shmFd;
  byte dataByte;

  /** Close the connection once the response is out (bad token, limits, garbage). */
  boolean closeAfter;

  /** Send nothing, just close (malformed input: stock closes without a reply). */
  boolean closeOnly;

  /** Wait for the client's receipt byte before reading the next request. */
  boolean awaitReceipt;

  /** Runs if the fds never reach the client or the receipt never comes: unregisters slots. */
  Runnable onFailure;

  /**
   * Called once with the request's outcome (fds handed over and receipted, or not), for the
   * DataNode's own metrics and client-trace log; null when the request is not traced.
   */
  java.util.function.Consumer<Boolean> onDone;

  /** A segment this connection now carries: any later byte or EOF frees it. */
  ShimSegment newSegment;

  /**
   * Phase marks of a granted op 87 ({@link ShimMetrics.FdPhase}), {@code System.nanoTime()}: frame
   * decoded (event loop), files about to be opened and opened (worker), reply built, and the event
   * loop's send begun; 0 when not reached. {@link #startNanos} is the worker's start.
   */
  long decodedNanos;

  long openStartNanos;
  long openEndNanos;
  long builtNanos;
  long sendStartNanos;

  /**
   * When the request was decoded, or, for a reply built without a decoded request (a limit's
   * refusal), when the reply was started: the start of the op latency the shim publishes, so that a
   * wait for a worker counts (a request's time as its client sees it inside the shim).
   */
  long receivedNanos() {
    return decodedNanos != 0 ? decodedNanos : startNanos;
  }

  /** When the fds were passed (or the response sent, for a reply without fds); 0 until then. */
  long passedNanos;

  /**
   * Response bytes the worker already wrote to the socket ({@code ShimConnectionHandler} replies
   * from the worker when the socket takes it at once); the event loop sends the rest.
   */
  int bytesSent;

  /** The worker's direct write failed (the peer is gone): the event loop abandons and closes. */
  boolean sendFailed;

  Reply(ShimMetrics.OpKind op, Status status, byte[] bytes, long startNanos) {
    this.op = op;
    this.status = status;
    this.bytes = bytes;
    this.startNanos = startNanos;
  }

  static Reply closeOnly(ShimMetrics.OpKind op, long startNanos) {
    Reply r = new Reply(op, Status.ERROR, new byte[0], startNanos);
    r.closeOnly = true;
    return r;
  }

  boolean hasFds() {
    return !streams.isEmpty() || shmFd != null;
  }

  /** The fd numbers to pass, in order (views owned by this reply). */
  int[] fdNumbers() throws IOException {
    if (shmFd != null) {
      return new int[] {shmFd.fd()};
    }
    int[] fds = new int[streams.size()];
    for (int i = 0; i < fds.length; i++) {
      fds[i] = FdPassing.fdNumber(streams.get(i).getFD());
    }
    return fds;
  }

  int fdCount() {
    return shmFd != null ? 1 : streams.size();
  }

  /** Closes the shim's own copies of every fd; idempotent. */
  void closeOwnCopies() {
    for (FileInputStream s : streams) {
      try {
        s.close();
      } catch (IOException e) {
        LOG.warn("Could not close a replica stream after passing it", e);
      }
    }
    streams.clear();
    for (Runnable release : fdReleases) {
      release.run();
    }
    fdReleases.clear();
    if (shmFd != null) {
      shmFd.close();
      shmFd = null;
    }
  }

  /** The reply will not complete: close fds and undo registrations. */
  void abandon(SegmentRegistry registry) {
    closeOwnCopies();
    runOnFailure();
    done(false);
    if (newSegment != null) {
      registry.remove(newSegment);
      newSegment = null;
    }
  }

  /** Reports the outcome to {@link #onDone}, at most once. */
  void done(boolean success) {
    java.util.function.Consumer<Boolean> d = onDone;
    onDone = null;
    if (d != null) {
      d.accept(success);
    }
  }

  void runOnFailure() {
    Runnable r = onFailure;
    onFailure = null;
    if (r != null) {
      r.run();
    }
  }
}
