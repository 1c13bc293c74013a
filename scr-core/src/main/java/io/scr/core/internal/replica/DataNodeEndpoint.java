package io.scr.core.internal.replica;

import io.scr.core.internal.net.DomainConnection;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.SegmentWatcher;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.FailureClass;
import io.scr.shm.Segment;
import io.scr.shm.SegmentSource;
import io.scr.shm.ShmId;
import io.scr.shm.ShmSupport;
import io.scr.shm.Slot;
import io.scr.shm.SlotId;
import io.scr.shm.SlotPool;
import io.scr.shm.SlotPoolClosedException;
import io.scr.shm.SlotPoolExhaustedException;
import io.scr.shm.SlotReleaser;
import io.scr.shm.internal.Interrupts;
import java.io.Closeable;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.net.SocketException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The slots of one DataNode socket path: a {@link SlotPool} fed by shared-memory segments that this
 * class requests with op 89, each on its own connection (the DataNode ties the segment's life to
 * it; it is never written to again, and closing it frees the segment), watched for EOF by the
 * {@link SegmentWatcher}. Released slots go back on pooled connections, from the pool's maintenance
 * thread (or a reader that found the pool empty and helps): in one op-127 BATCH_RELEASE request per
 * batch when the DataNode is an scr shim that offers it, else with one op 88 per slot.
 *
 * <p>The pool is created on first use, so a path that is never read from costs no threads; the
 * reader that creates it fetches its first segment on its own thread, as stock does, instead of
 * waiting for the new refill thread to be scheduled and fetch it, which made a new engine's first
 * read slower (docs/benchmarks.md, "Replica open"). Without shared memory (disabled, unavailable in
 * this JVM, or the DataNode refused and the {@link FailureClass#SHM} backoff is active) {@link
 * #allocateSlot()} returns null and replicas are opened without a slot.
 *
 * <p>Concurrency: thread-safe. The pool is created once under this object's monitor; allocation is
 * the pool's lock-free path. {@code segments} maps segment ids to their connections (concurrent).
 */
final class DataNodeEndpoint implements SegmentSource, SlotReleaser, Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodeEndpoint.class);

  private final String path;
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final ClientCounters counters;
  private final PathBackoff backoff;
  private final Function<DataNodeEndpoint, SlotPool> slotPoolFactory;
  private final SegmentWatcherHolder watcher;
  private final String clientName;
  private final boolean shmEnabled;

  /**
   * Whether the pool fetches segments ahead of need (low watermark above zero). Without, nothing is
   * fetched until an allocation asks, so there is no first segment in flight to wait for.
   */
  private final boolean poolFetchesAhead;

  private final ConcurrentHashMap<ShmId, DomainConnection> segments = new ConcurrentHashMap<>();

  /**
   * The open replicas holding a slot of this DataNode (added when opened, removed when closed): who
   * the segment watcher's report of a closed segment concerns ({@link OrphanedReplicas}).
   */
  private final java.util.Set<Replica> held = ConcurrentHashMap.newKeySet();

  private final OrphanedReplicas orphans;

  /**
   * Told the path and why when the DataNode closes a segment's connection: a sign for the path's
   * health (a DataNode that died or is shutting down), which its probe then confirms or clears.
   */
  private final BiConsumer<String, String> segmentDropped;

  /**
   * Whether the DataNode at a path may be sent a segment request now (its health): not while it is
   * suspect, unresponsive or dead, as replica opens are not.
   */
  private final java.util.function.Predicate<String> admitsRequests;

  /**
   * How long the slot of a refused fd request stays out of the pool. The stock DataNode answers a
   * refusal first and only then, in its request's {@code finally}, unregisters the slot and clears
   * its VALID flag; a slot freed at once could be allocated and sent again (by another thread, on
   * another connection) before that, and the DataNode then refuses the new request because the slot
   * "is not marked as valid": one more request for the block (seen with prefetch on open racing
   * reads of remote blocks). The DataNode's {@code finally} follows its answer by microseconds.
   */
  static final long REFUSED_SLOT_QUARANTINE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** Slots of refused requests with the time they were refused, oldest first. */
  private final java.util.concurrent.ConcurrentLinkedQueue<RefusedSlot> refusedSlots =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private final io.scr.cache.Ticker ticker;

  /** A refused request's slot and when it was refused. Immutable. */
  private static final class RefusedSlot {
    final Slot slot;
    final long refusedAtNanos;

    RefusedSlot(Slot slot, long refusedAtNanos) {
      this.slot = slot;
      this.refusedAtNanos = refusedAtNanos;
    }
  }

  private volatile SlotPool slots;
  private volatile boolean closed;

  /**
   * Done once the first segment request has ended, either way. Until then an allocation waits for
   * it (bounded by one exchange's timeouts) rather than the pool's short allocation wait: a replica
   * opened without a slot is only known to be stale by age, and a new engine's first replicas would
   * otherwise race the first segment (stock waits for it too).
   */
  private final CompletableFuture<Void> firstSegment = new CompletableFuture<>();

  DataNodeEndpoint(
      String path,
      DomainSocketPool pool,
      PeerExtensions extensions,
      ClientCounters counters,
      PathBackoff backoff,
      SegmentWatcherHolder watcher,
      String clientName,
      boolean shmEnabled,
      boolean poolFetchesAhead,
      Function<DataNodeEndpoint, SlotPool> slotPoolFactory,
      io.scr.cache.Ticker ticker,
      OrphanedReplicas orphans,
      BiConsumer<String, String> segmentDropped,
      java.util.function.Predicate<String> admitsRequests) {
    this.orphans = orphans;
    this.segmentDropped = segmentDropped;
    this.admitsRequests = admitsRequests;
    this.ticker = ticker;
    this.path = path;
    this.pool = pool;
    this.extensions = extensions;
    this.counters = counters;
    this.backoff = backoff;
    this.watcher = watcher;
    this.clientName = clientName;
    this.shmEnabled = shmEnabled && ShmSupport.isAvailable();
    this.poolFetchesAhead = poolFetchesAhead;
    this.slotPoolFactory = slotPoolFactory;
    if (shmEnabled && !ShmSupport.isAvailable()) {
      LOG.info(
          "shared memory is unavailable ({}); replicas from {} go stale by age instead",
          ShmSupport.unavailabilityCause(),
          path);
    }
  }

  String path() {
    return path;
  }

  /** {@code replica}, holding a slot of this DataNode, is open (until {@link #unhold}). */
  void hold(Replica replica) {
    held.add(replica);
  }

  /** {@code replica} closed. */
  void unhold(Replica replica) {
    held.remove(replica);
  }

  /**
   * {@code replica}'s slot reads invalid before any segment was reported closed: orphans it if the
   * DataNode no longer answers on its socket (see {@link OrphanedReplicas}); false otherwise, and
   * when outliving the DataNode is off.
   */
  boolean orphanIfGone(Replica replica) {
    if (closed || !orphans.enabled() || dataNodeAnswers()) {
      return false;
    }
    return orphans.orphanOne(this, replica);
  }

  /** How long one look at whether the DataNode answers on the socket is trusted. */
  private static final long ANSWER_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private volatile long answerCheckedAtNanos = Long.MIN_VALUE / 2;
  private volatile boolean lastAnswer = true;

  /**
   * Whether a process accepts connections on the socket: no if the socket file is gone or a connect
   * is refused; yes if it connects, or the connect times out (a hung DataNode is not a dead one).
   * Looked at once per {@link #ANSWER_CHECK_NANOS}, by whoever asks first; the connection is closed
   * at once, without a request (a DataNode takes that as an idle client).
   */
  private boolean dataNodeAnswers() {
    long now = ticker.read();
    if (now - answerCheckedAtNanos < ANSWER_CHECK_NANOS) {
      return lastAnswer;
    }
    boolean answers;
    java.io.File socket = new java.io.File(path);
    if (!socket.exists()) {
      answers = false;
    } else {
      try (org.newsclub.net.unix.AFUNIXSocket s =
          org.newsclub.net.unix.AFUNIXSocket.newInstance()) {
        s.connect(org.newsclub.net.unix.AFUNIXSocketAddress.of(socket), 100);
        answers = true;
      } catch (java.net.SocketTimeoutException e) {
        answers = true;
      } catch (IOException | RuntimeException e) {
        answers = false; // refused: nobody listens on the socket
      }
    }
    lastAnswer = answers;
    answerCheckedAtNanos = now;
    return answers;
  }

  /** The open replicas holding a slot of this DataNode (a live view). */
  Iterable<Replica> heldReplicas() {
    return held;
  }

  /** The slot pool, or null before the first allocation or without shared memory. */
  SlotPool slotPoolOrNull() {
    return slots;
  }

  /**
   * A fresh VALID slot for an fd request, or null to go on without one (shared memory off or
   * backing off, pool exhausted or closed).
   */
  Slot allocateSlot() {
    freeRefusedSlots(false);
    if (!shmEnabled || closed || backoff.isBackingOff(path, FailureClass.SHM)) {
      return null;
    }
    SlotPool p = slotPool();
    if (p == null) {
      return null;
    }
    // With low watermark 0 the allocation itself asks for the segment (and waits for it at most
    // the pool's allocation wait): waiting here for a fetch nobody started took the whole exchange
    // timeout (6 s).
    if (poolFetchesAhead && !firstSegment.isDone() && !awaitFirstSegment()) {
      return null;
    }
    try {
      return p.allocate();
    } catch (SlotPoolExhaustedException | SlotPoolClosedException e) {
      LOG.debug("no slot from {}: {}", path, e.getMessage());
      return null;
    } catch (IOException e) {
      LOG.debug("no slot from {}", path, e);
      return null;
    }
  }

  /**
   * Gives back the slot of a request the DataNode answered with a refusal (it registered the slot,
   * and unregisters it after answering): freed, unregistered, once {@link
   * #REFUSED_SLOT_QUARANTINE_NANOS} have passed (by the next allocation, or {@link #close()}).
   */
  void releaseRefused(Slot slot) {
    refusedSlots.add(new RefusedSlot(slot, ticker.read()));
    if (closed) {
      freeRefusedSlots(true);
    }
  }

  private void freeRefusedSlots(boolean all) {
    if (refusedSlots.isEmpty()) {
      return;
    }
    long now = ticker.read();
    SlotPool p = slots;
    RefusedSlot r;
    while ((r = refusedSlots.peek()) != null
        && (all || now - r.refusedAtNanos >= REFUSED_SLOT_QUARANTINE_NANOS)) {
      if (refusedSlots.remove(r) && p != null) {
        p.releaseUnregistered(r.slot);
      }
    }
  }

  /** Waits for the first segment request; false if it failed, timed out or was interrupted. */
  private boolean awaitFirstSegment() {
    try {
      firstSegment.get(pool.exchangeTimeoutMs(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException e) {
      LOG.debug("no first segment from {} yet: {}", path, e.toString());
    }
    return !backoff.isBackingOff(path, FailureClass.SHM);
  }

  private SlotPool slotPool() {
    SlotPool p = slots;
    if (p == null) {
      synchronized (this) {
        p = slots;
        if (p == null && !closed) {
          p = slotPoolFactory.apply(this);
          slots = p;
        }
      }
    }
    return p;
  }

  // ---- SegmentSource: called by the pool's refill/maintenance threads ----

  @Override
  public Segment fetch() throws IOException {
    if (closed) {
      throw new IOException("endpoint " + path + " is closed");
    }
    if (backoff.isBackingOff(path) || backoff.isBackingOff(path, FailureClass.SHM)) {
      // The pool refills in the background; it must not keep knocking on a socket that failed,
      // nor ask for segments before the SHM backoff (scr.backoff.shm.seconds) is over: its own
      // retries start at 100 ms.
      firstSegment.complete(null);
      throw new IOException(
          "DataNode socket " + path + " is backing off after a failure; no segment requested");
    }
    if (!admitsRequests.test(path)) {
      // Suspect, unresponsive or dead: the pool retries on its own schedule, and at once when the
      // DataNode answers again; a request now would wait out the deadline against a hung peer.
      firstSegment.complete(null);
      throw new IOException(
          "DataNode at " + path + " is not healthy; no segment requested until it answers again");
    }
    ShortCircuitExchanges.ShmGrant grant;
    try {
      grant = ShortCircuitExchanges.requestShm(pool, path, clientName);
    } catch (IOException e) {
      shmFailed(e, e.getMessage());
      throw e;
    }
    DomainConnection connection = grant.connection();
    FileDescriptor fd = grant.fd();
    Segment segment;
    try (FileInputStream shm = new FileInputStream(fd)) {
      long size = shm.getChannel().size();
      segment = Segment.map(grant.shmId(), fd, (int) Math.min(size, Integer.MAX_VALUE));
    } catch (IOException | RuntimeException e) {
      connection.close();
      shmFailed(e, "mapping the segment failed: " + e);
      throw e;
    }
    ShmId id = segment.id();
    segments.put(id, connection);
    try {
      watcher.get().watch(connection, () -> onDisconnect(id));
    } catch (IOException e) {
      segments.remove(id);
      connection.close();
      segment.close();
      throw e;
    }
    backoff.recordShmSuccess(path);
    firstSegment.complete(null);
    return segment;
  }

  /**
   * A fetch failed: the path backs off shared memory ({@link FailureClass#SHM}) and the first
   * segment's waiters stop waiting. Not for an interrupt of the fetching thread: the pool's first
   * fetch runs on the reader that built it (as stock's does), and the channel that sizes a segment
   * is interruptible (junixsocket's exchange is not), but that reader's interrupt says nothing
   * about the DataNode's shared memory; the refill thread fetches instead.
   */
  private void shmFailed(Exception e, String reason) {
    if (Interrupts.isOwnInterrupt(e)) {
      return;
    }
    if (!io.scr.core.internal.health.DataNodeHealth.isTimeout(e)) {
      // A DataNode that answered late (a restarted one warming up, a GC pause) is the health's
      // business, which the exchange's deadline has told; the pool retries from 100 ms, and at
      // once when the DataNode answers again. The SHM backoff is for a DataNode that refuses or
      // breaks shared memory: recorded against the socket that answered, it would outlast the
      // DataNode's slow start by minutes.
      backoff.recordFailure(path, FailureClass.SHM, reason);
    }
    firstSegment.complete(null);
  }

  /**
   * The DataNode closed a segment's connection (watcher thread). The segment may not be in the pool
   * yet: the watch starts in {@link #fetch()}, before the pool adopts what it returns; the pool
   * remembers a disconnect of the segment it is fetching (a lost report would leave the dead
   * segment allocatable, and the DataNode refuses every fd request carrying one of its slots).
   * During the pool's very first fetch {@code slots} may not be set yet: the monitor is held while
   * the pool is built (which makes that first fetch on the reader's thread), so taking it waits for
   * that (one op-89 exchange, once per endpoint) instead of dropping the report.
   */
  private void onDisconnect(ShmId id) {
    SlotPool p = slots;
    if (p == null) {
      synchronized (this) {
        p = slots;
      }
    }
    if (p != null && segments.containsKey(id)) {
      LOG.debug("DataNode at {} dropped segment {}", path, id);
      // Before the pool clears VALID: whether a slot was still VALID is what tells a DataNode that
      // went away from one that invalidated the replica.
      orphans.segmentLost(this, id);
      p.segmentDisconnected(id);
      segmentDropped.accept(path, "the DataNode closed shared-memory segment " + id);
    }
  }

  /**
   * Asks the DataNode on this socket to vouch for the orphaned {@code replica} again: op 87 for its
   * block and generation stamp with a new slot, then the identity (device, inode) of the block file
   * it passes against the held one. On {@link OrphanedReplicas.Revalidation#REVALIDATED} the
   * replica has adopted the new slot; the passed fds are closed here in every case.
   */
  OrphanedReplicas.Revalidation revalidate(Replica replica) {
    if (closed) {
      return OrphanedReplicas.Revalidation.NOT_YET;
    }
    Slot held = replica.slot();
    if (held != null && held.anchorCount() != 0) {
      // A zero-copy read anchored the slot before its DataNode went away and still holds the
      // anchor, which it gives back to the replica's slot: not swapped under it (the count of an
      // invalid slot only goes down).
      return OrphanedReplicas.Revalidation.NOT_YET;
    }
    Slot slot = allocateSlot(); // null while the path or its shared memory backs off
    SlotPool slotPool = slots;
    if (slot == null || slotPool == null) {
      return OrphanedReplicas.Revalidation.NOT_YET;
    }
    FileDescriptor[] fds = new FileDescriptor[2];
    try {
      ShortCircuitExchanges.requestFds(
          pool, path, replica.block(), replica.token(), slot.id(), fds);
    } catch (ShortCircuitRefusedException e) {
      releaseRefused(slot);
      // Absent: not of this generation stamp, or not there at all. Anything else (not ready to
      // serve the pool yet, a slot refused) may pass.
      return e.replicaAbsent()
          ? OrphanedReplicas.Revalidation.GONE
          : OrphanedReplicas.Revalidation.NOT_YET;
    } catch (org.apache.hadoop.security.token.SecretManager.InvalidToken e) {
      // A DataNode that has not registered has no block keys yet; an expired token ages the
      // orphan out.
      releaseRefused(slot);
      return OrphanedReplicas.Revalidation.NOT_YET;
    } catch (IOException | RuntimeException e) {
      ReplicaOpener.closeQuietly(fds);
      slotPool.releaseUnregistered(slot);
      LOG.debug("re-validating {} at {}: {}", replica, path, e.toString());
      return OrphanedReplicas.Revalidation.NOT_YET;
    }
    boolean same;
    try {
      // The block file is what the replica reads; its checksums were read from the meta file when
      // it was opened and are held since (the meta fd is closed then), and a new meta file comes
      // with a new generation stamp, which the DataNode has just accepted as unchanged.
      same = FileIdentity.same(fds[0], replica.dataFd());
    } finally {
      ReplicaOpener.closeQuietly(fds);
    }
    if (!same) {
      slotPool.release(slot); // registered by the grant
      return OrphanedReplicas.Revalidation.CHANGED;
    }
    Slot old = replica.adoptSlot(slot);
    if (old == null) {
      slotPool.release(slot); // the replica closed meanwhile
      return OrphanedReplicas.Revalidation.GONE;
    }
    SlotPool oldPool = slotPool; // one pool per endpoint: the dead segment's slot goes back to it
    oldPool.release(old);
    return OrphanedReplicas.Revalidation.REVALIDATED;
  }

  /** The connection segment {@code id} is tied to, or null (tests inject a DataNode's drop). */
  DomainConnection segmentConnection(ShmId id) {
    return segments.get(id);
  }

  @Override
  public void returnSegment(Segment segment) {
    DomainConnection connection = segments.remove(segment.id());
    if (connection != null) {
      connection.close(); // the DataNode sees EOF and drops its side of the segment
    }
    segment.close();
  }

  // ---- SlotReleaser: called by the pool's maintenance thread ----

  /**
   * Tells the DataNode that {@code slotIds} are free: in one op-127 BATCH_RELEASE request when the
   * peer advertised it (probed on the first release, see {@link PeerExtensions}), else one op 88
   * per slot. A batch the peer drops the connection on (a DataNode that no longer knows op 127) is
   * told again with op 88, and the path counts as stock until its DataNode restarts: nothing of it
   * reaches the pool.
   */
  @Override
  public void release(List<SlotId> slotIds) throws IOException {
    if (slotIds.isEmpty()) {
      return;
    }
    if (extensions.features(path).batchRelease()) {
      try {
        int requests = ShortCircuitExchanges.releaseSlotsBatched(pool, path, slotIds);
        counters.recordBatchedReleases(requests, slotIds.size());
        return;
      } catch (EOFException | SocketException e) {
        // Closed on an extension request (the pool already retried a stale connection once).
        extensions.extensionFailed(path, e.toString());
      }
    }
    ShortCircuitExchanges.releaseSlots(pool, path, slotIds);
    counters.recordStockReleases(slotIds.size());
  }

  /** Closes the slot pool; segments still in use are returned when their last slot is released. */
  @Override
  public void close() {
    SlotPool p;
    synchronized (this) {
      closed = true;
      p = slots;
    }
    firstSegment.complete(null);
    freeRefusedSlots(true);
    if (p != null) {
      p.close();
    }
  }

  /** Creates the segment watcher (and its thread) on first use; shared by all endpoints. */
  interface SegmentWatcherHolder {
    SegmentWatcher get() throws IOException;
  }
}
