package io.scr.core.internal.replica;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.cache.Ticker;
import io.scr.core.ScrKeys;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.PeerExtensions;
import io.scr.core.internal.net.SegmentWatcher;
import io.scr.core.stats.ClientCounters;
import io.scr.shm.SlotPool;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

/**
 * The engine's {@link DataNodeEndpoint}s, one per DataNode socket path, created on first use, with
 * their slot pools and the one {@link SegmentWatcher} they share; and the engine's closed gate.
 *
 * <p>Concurrency: thread-safe. Endpoints are created once per path (a concurrent map). {@link
 * #closing} is the gate: set first by {@link #closeAll()}; after it no endpoint (hence no slot-pool
 * thread, segment or socket) is created, and an endpoint that raced the close is closed by the
 * thread that made it. {@code watcherLock} guards the watcher, created lazily by the first segment
 * fetch and closed by {@link #closeAll()}; nothing else is called under it but the watcher's
 * constructor.
 */
final class Endpoints {
  private static final AtomicInteger THREAD_IDS = new AtomicInteger();

  /** The slot pools' longest pause between two segment fetches that failed. */
  static final Duration MAX_FETCH_BACKOFF = Duration.ofSeconds(1);

  private final String name;
  private final DomainSocketPool pool;
  private final PeerExtensions extensions;
  private final ClientCounters counters;
  private final PathBackoff backoff;
  private final String clientName;
  private final boolean shmEnabled;
  private final int slotLowWatermark;
  private final Duration slotWait;
  private final Ticker ticker;
  private final ConcurrentHashMap<String, DataNodeEndpoint> endpoints = new ConcurrentHashMap<>();
  private final OrphanedReplicas orphans;

  private final Object watcherLock = new Object();

  @GuardedBy("watcherLock")
  private SegmentWatcher watcher;

  /**
   * The closed gate: set first thing in {@link #closeAll()}. After it no endpoint is created and a
   * load in flight ends as {@code CLOSED}, not as an I/O failure that would back a path off.
   */
  private volatile boolean closing;

  /**
   * Told when a DataNode closes a segment's connection (the DataNode health's {@code faltered}).
   */
  private final BiConsumer<String, String> segmentDropped;

  private final java.util.function.Predicate<String> admitsRequests;

  Endpoints(
      String name,
      DomainSocketPool pool,
      PeerExtensions extensions,
      ClientCounters counters,
      PathBackoff backoff,
      String clientName,
      boolean shmEnabled,
      int slotLowWatermark,
      Duration slotWait,
      Ticker ticker,
      boolean outliveDataNode,
      long staleAfterNanos,
      BiConsumer<String, String> segmentDropped,
      java.util.function.Predicate<String> admitsRequests) {
    this.admitsRequests = admitsRequests;
    this.name = name;
    this.segmentDropped = segmentDropped;
    this.orphans =
        new OrphanedReplicas(
            name,
            outliveDataNode,
            ticker,
            counters,
            staleAfterNanos,
            r -> {
              Thread t = new Thread(r, "scr-orphans-" + name);
              t.setDaemon(true);
              return t;
            });
    this.pool = pool;
    this.extensions = extensions;
    this.counters = counters;
    this.backoff = backoff;
    this.clientName = clientName;
    this.shmEnabled = shmEnabled;
    this.slotLowWatermark = slotLowWatermark;
    this.slotWait = slotWait;
    this.ticker = ticker;
  }

  /** Whether the engine is closing or closed. */
  boolean isClosing() {
    return closing;
  }

  /** The socket paths this engine has talked to (a live view). */
  Set<String> paths() {
    return endpoints.keySet();
  }

  /**
   * The endpoint of {@code path}, created on first use unless the manager is closing.
   *
   * @throws IOException when the manager is closing or closed (a load that raced {@link
   *     #closeAll()})
   */
  DataNodeEndpoint endpoint(String path) throws IOException {
    DataNodeEndpoint e = endpoints.get(path);
    if (e == null) {
      if (closing) {
        throw closedException(path);
      }
      e = newEndpoint(path);
    }
    if (closing) {
      // close() may have listed the endpoints before this one was added: close it here (it is
      // idempotent, and a closed endpoint never builds a pool), so nothing of it outlives us.
      e.close();
      throw closedException(path);
    }
    return e;
  }

  private IOException closedException(String path) {
    return new IOException(
        "replica manager " + name + " is closed; no short-circuit read from " + path);
  }

  private DataNodeEndpoint newEndpoint(String path) {
    return endpoints.computeIfAbsent(
        path,
        p ->
            new DataNodeEndpoint(
                p,
                pool,
                extensions,
                counters,
                backoff,
                this::watcher,
                clientName,
                shmEnabled,
                slotLowWatermark > 0,
                this::newSlotPool,
                ticker,
                orphans,
                segmentDropped,
                admitsRequests));
  }

  private SlotPool newSlotPool(DataNodeEndpoint endpoint) {
    String poolName = name + "@" + endpoint.path();
    ThreadFactory tf =
        r -> {
          Thread t = new Thread(r, "scr-slots-" + THREAD_IDS.incrementAndGet() + "-" + name);
          t.setDaemon(true);
          return t;
        };
    return SlotPool.newBuilder(poolName, endpoint, endpoint)
        .lowWatermark(slotLowWatermark)
        .maxAllocationWait(slotWait)
        .settingNames(
            ScrKeys.SLOT_POOL_MAX_ALLOCATION_WAIT_MS.name(), ScrKeys.SLOT_POOL_LOW_WATERMARK.name())
        .firstFetchOnBuild(true)
        // Fetches while the path backs off cost no request (DataNodeEndpoint.fetch refuses them),
        // so the pool may look often: a DataNode back on the socket gets its first segment (and
        // orphaned replicas their new slots) within a second, not after the 10 s default.
        .maxFetchBackoff(MAX_FETCH_BACKOFF)
        .ticker(ticker::read)
        .threadFactory(tf)
        .build();
  }

  private SegmentWatcher watcher() throws IOException {
    synchronized (watcherLock) {
      if (closing) {
        // The engine is closing: its pools stop fetching quietly (not a fetch failure).
        throw new io.scr.shm.SlotPoolClosedException("replica manager " + name + " is closed");
      }
      if (watcher == null) {
        watcher =
            new SegmentWatcher(
                r -> {
                  Thread t = new Thread(r, "scr-segment-watcher-" + name);
                  t.setDaemon(true);
                  return t;
                });
      }
      return watcher;
    }
  }

  /**
   * The DataNode at {@code path} answers again after it was unresponsive or dead: its slot pool
   * stops backing off and its orphaned replicas are asked about at once.
   */
  void dataNodeAnswers(String path) {
    DataNodeEndpoint e = endpoints.get(path);
    if (e == null || closing) {
      return;
    }
    io.scr.shm.SlotPool p = e.slotPoolOrNull();
    if (p != null) {
      p.sourceAnswers();
    }
    orphans.dataNodeAnswers(e);
  }

  /** Open replicas read now without their DataNode vouching for them (a gauge). */
  int orphanedReplicas() {
    return orphans.orphanCount(endpoints.values());
  }

  /** The slot pools' counters, one per DataNode path that has one. */
  List<io.scr.shm.SlotPoolStats> slotPoolStats() {
    List<io.scr.shm.SlotPoolStats> out = new ArrayList<>();
    for (DataNodeEndpoint e : endpoints.values()) {
      SlotPool p = e.slotPoolOrNull();
      if (p != null) {
        out.add(p.stats());
      }
    }
    return out;
  }

  /**
   * Shuts the gate and closes every endpoint (its slot pool: released slots are then freed here,
   * not told to the DataNode one by one); idempotent.
   */
  void closeAll() {
    closing = true;
    orphans.close(); // no re-validation against endpoints being closed

    for (DataNodeEndpoint e : endpoints.values()) {
      e.close();
    }
  }

  /** Closes the segment watcher; after {@link #closeAll()}. */
  void closeWatcher() {
    SegmentWatcher w;
    synchronized (watcherLock) {
      w = watcher;
      watcher = null;
    }
    if (w != null) {
      w.close();
    }
  }
}
