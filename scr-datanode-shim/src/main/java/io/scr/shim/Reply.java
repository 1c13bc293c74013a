package io.scr.shim;

import io.scr.shim.SegmentRegistry.ShimSegment;
import io.scr.shm.SharedMemoryFd;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a request produced: the response bytes, the fds to pass after them, and what the connection
 * does next. Built once by {@link Builder} on the thread that served the request (an event loop or
 * a worker); how much of it has been sent is not part of it ({@link DirectReplyWriter.Progress},
 * {@link ReplyWriter}).
 *
 * <p>Concurrency: every field is final, so a reply is safely published to whichever thread sends
 * it. The three things that happen to it once, from whichever thread gets there first, are atomic:
 * closing the shim's copies of its fds ({@link #closeOwnCopies}), the failure undo ({@link
 * #runOnFailure}) and the outcome report ({@link #done}); the segment it carries is taken by the
 * connection or removed on abandon, once ({@link #takeSegment}).
 *
 * <p>fd ownership: the reply owns {@code streams} and {@code shmFd} (and their reservations);
 * {@link #closeOwnCopies()} closes them exactly once, after the {@code sendmsg} (the peer has its
 * own duplicates) or when the reply is abandoned.
 */
final class Reply {
  private static final Logger LOG = LoggerFactory.getLogger(Reply.class);

  final ShimMetrics.OpKind op;
  final Status status;
  final byte[] bytes;

  /** The fds to pass, in order (views owned by this reply); empty when none. */
  final List<FileInputStream> streams;

  /** A segment's fd to pass (op 89), or null. */
  final SharedMemoryFd shmFd;

  /** The byte sent with the fds (the receipt flag of op 87). */
  final byte dataByte;

  /** Close the connection once the response is out (bad token, limits, garbage). */
  final boolean closeAfter;

  /** Send nothing, just close (malformed input: stock closes without a reply). */
  final boolean closeOnly;

  /** Wait for the client's receipt byte before reading the next request. */
  final boolean awaitReceipt;

  /**
   * Phase marks of a granted op 87 ({@link ShimMetrics.FdPhase}), on the shim's {@link Ticker}:
   * frame decoded (event loop; 0 for a reply made without a decoded frame), request handling
   * started, files about to be opened and opened, reply built; 0 when not reached.
   */
  final long decodedNanos;

  final long startNanos;
  final long openStartNanos;
  final long openEndNanos;
  final long builtNanos;

  private final List<Runnable> fdReleases;
  private final AtomicBoolean fdsClosed = new AtomicBoolean();
  private final AtomicReference<Runnable> onFailure;
  private final AtomicReference<Consumer<Boolean>> onDone;
  private final AtomicReference<ShimSegment> newSegment;

  private Reply(Builder b) {
    this.op = b.op;
    this.status = b.status;
    this.bytes = b.bytes;
    this.streams = Collections.unmodifiableList(new ArrayList<>(b.streams));
    this.fdReleases = new ArrayList<>(b.fdReleases);
    this.shmFd = b.shmFd;
    this.dataByte = b.dataByte;
    this.closeAfter = b.closeAfter;
    this.closeOnly = b.closeOnly;
    this.awaitReceipt = b.awaitReceipt;
    this.decodedNanos = b.decodedNanos;
    this.startNanos = b.startNanos;
    this.openStartNanos = b.openStartNanos;
    this.openEndNanos = b.openEndNanos;
    this.builtNanos = b.builtNanos;
    this.onFailure = new AtomicReference<>(b.onFailure);
    this.onDone = new AtomicReference<>(b.onDone);
    this.newSegment = new AtomicReference<>(b.newSegment);
  }

  static Builder builder(ShimMetrics.OpKind op, Status status, byte[] bytes, long startNanos) {
    return new Builder(op, status, bytes, startNanos);
  }

  static Reply closeOnly(ShimMetrics.OpKind op, long startNanos) {
    return builder(op, Status.ERROR, new byte[0], startNanos).closeOnly().build();
  }

  /**
   * When the request was decoded, or, for a reply built without a decoded request (a limit's
   * refusal), when the reply was started: the start of the op latency the shim publishes, so that a
   * wait for a worker counts (a request's time as its client sees it inside the shim).
   */
  long receivedNanos() {
    return decodedNanos != 0 ? decodedNanos : startNanos;
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

  /** Closes the shim's own copies of every fd and gives back their reservations; once. */
  void closeOwnCopies() {
    if (!fdsClosed.compareAndSet(false, true)) {
      return;
    }
    for (FileInputStream s : streams) {
      try {
        s.close();
      } catch (IOException e) {
        LOG.warn("Could not close a replica stream after passing it", e);
      }
    }
    for (Runnable release : fdReleases) {
      release.run();
    }
    if (shmFd != null) {
      shmFd.close();
    }
  }

  /** The segment this reply carries, or null if none or already taken; does not take it. */
  ShimSegment segment() {
    return newSegment.get();
  }

  /** The segment this reply hands to its connection, or null if none or already taken. */
  ShimSegment takeSegment() {
    return newSegment.getAndSet(null);
  }

  /** The reply will not complete: close fds and undo registrations. */
  void abandon(SegmentRegistry registry) {
    closeOwnCopies();
    runOnFailure();
    done(false);
    ShimSegment seg = takeSegment();
    if (seg != null) {
      registry.remove(seg);
    }
  }

  /**
   * Reports the outcome (fds handed over and receipted, or not) at most once, for the DataNode's
   * own metrics and client-trace log.
   */
  void done(boolean success) {
    Consumer<Boolean> d = onDone.getAndSet(null);
    if (d != null) {
      d.accept(success);
    }
  }

  /** Runs the undo for fds that never reached the client (unregisters slots), at most once. */
  void runOnFailure() {
    Runnable r = onFailure.getAndSet(null);
    if (r != null) {
      r.run();
    }
  }

  /** Collects a reply on the thread serving the request; not thread-safe, used once. */
  static final class Builder {
    private final ShimMetrics.OpKind op;
    private final Status status;
    private final byte[] bytes;
    private final long startNanos;
    private final List<FileInputStream> streams = new ArrayList<>();
    private final List<Runnable> fdReleases = new ArrayList<>();
    private SharedMemoryFd shmFd;
    private byte dataByte;
    private boolean closeAfter;
    private boolean closeOnly;
    private boolean awaitReceipt;
    private long decodedNanos;
    private long openStartNanos;
    private long openEndNanos;
    private long builtNanos;
    private Runnable onFailure;
    private Consumer<Boolean> onDone;
    private ShimSegment newSegment;

    private Builder(ShimMetrics.OpKind op, Status status, byte[] bytes, long startNanos) {
      this.op = op;
      this.status = status;
      this.bytes = bytes;
      this.startNanos = startNanos;
    }

    /**
     * Passes {@code fds} (owned by the reply from now on) after the bytes, with {@code dataByte};
     * {@code releases} give back their reservations once they are closed.
     */
    Builder passStreams(List<FileInputStream> fds, List<Runnable> releases, byte dataByte) {
      streams.addAll(fds);
      fdReleases.addAll(releases);
      this.dataByte = dataByte;
      return this;
    }

    /** Passes a new segment's fd (owned by the reply) and hands the segment to the connection. */
    Builder passSegment(SharedMemoryFd fd, ShimSegment segment) {
      this.shmFd = fd;
      this.newSegment = segment;
      this.dataByte = 0;
      return this;
    }

    Builder closeAfter() {
      closeAfter = true;
      return this;
    }

    Builder closeOnly() {
      closeOnly = true;
      return this;
    }

    Builder awaitReceipt(boolean await) {
      awaitReceipt = await;
      return this;
    }

    Builder decodedAt(long nanos) {
      decodedNanos = nanos;
      return this;
    }

    Builder phases(long openStart, long openEnd, long built) {
      openStartNanos = openStart;
      openEndNanos = openEnd;
      builtNanos = built;
      return this;
    }

    Builder onFailure(Runnable undo) {
      onFailure = undo;
      return this;
    }

    Builder onDone(Consumer<Boolean> outcome) {
      onDone = outcome;
      return this;
    }

    boolean hasOnDone() {
      return onDone != null;
    }

    Reply build() {
      return new Reply(this);
    }
  }
}
