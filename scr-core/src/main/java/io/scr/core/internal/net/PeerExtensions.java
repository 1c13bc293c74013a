package io.scr.core.internal.net;

import io.scr.core.internal.protocol.ShortCircuitProtocol;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which DataNode socket paths speak the scr shim's protocol extensions (op 127), found out once per
 * DataNode: the first caller that needs to know sends HELLO on a new connection ({@link
 * ShortCircuitExchanges#probeExtensions}: a release of a slot no DataNode registers); the shim
 * answers with the features it offers, a stock DataNode refuses it as any unknown slot, logging no
 * error. The answer is remembered with the identity of the socket file (device, inode and
 * modification time): a DataNode that restarts binds a new socket file, so the next caller probes
 * again; as long as the file is the same, the path is never probed twice, whatever the answer. A
 * probe that could not be made (no socket, timeout) is not remembered, and the caller uses the
 * stock ops.
 *
 * <p>When a peer that advertised an extension stops understanding it (the connection closes on an
 * extension request), the caller reports it with {@link #extensionFailed}: the path counts as stock
 * until its socket file changes. So a failure costs one extension request per DataNode start, never
 * a loop.
 *
 * <p>{@code enabled=false} ({@code scr.client.extensions.enabled}) makes every path stock without a
 * probe.
 *
 * <p>Concurrency: thread-safe and lock-free. At most one probe per path runs at a time; a caller
 * that finds one running uses the stock ops instead of waiting (callers are the slot pools' release
 * threads, and, rarely, a reader helping them). Answers are immutable and published through a
 * concurrent map. {@link #features} stats the socket file once per call.
 */
public final class PeerExtensions {
  private static final Logger LOG = LoggerFactory.getLogger(PeerExtensions.class);

  /** What a peer offers. Immutable. */
  public static final class Features {
    /** A stock peer: ops 87, 88 and 89 only. */
    public static final Features STOCK = new Features(null, false, false, false, false);

    private final String advertisement;
    private final boolean batchRelease;
    private final boolean batchFds;
    private final boolean replicaState;
    private final boolean ping;

    private Features(
        String advertisement,
        boolean batchRelease,
        boolean batchFds,
        boolean replicaState,
        boolean ping) {
      this.advertisement = advertisement;
      this.batchRelease = batchRelease;
      this.batchFds = batchFds;
      this.replicaState = replicaState;
      this.ping = ping;
    }

    /**
     * The features of a HELLO answer's message; {@link #STOCK} for null or for a message of another
     * protocol version (a later shim must keep answering version 1 to this client).
     */
    public static Features parse(String advertisement) {
      if (advertisement == null) {
        return STOCK;
      }
      String[] words = advertisement.trim().split("\\s+");
      if (words.length == 0 || !ShortCircuitProtocol.EXTENSIONS_V1.equals(words[0])) {
        return STOCK;
      }
      boolean release = false;
      boolean fds = false;
      boolean state = false;
      boolean ping = false;
      for (int i = 1; i < words.length; i++) {
        release |= ShortCircuitProtocol.FEATURE_BATCH_RELEASE.equals(words[i]);
        fds |= ShortCircuitProtocol.FEATURE_BATCH_FDS.equals(words[i]);
        state |= ShortCircuitProtocol.FEATURE_REPLICA_STATE.equals(words[i]);
        ping |= ShortCircuitProtocol.FEATURE_PING.equals(words[i]);
      }
      return new Features(advertisement, release, fds, state, ping);
    }

    /** Whether the peer takes several slot releases in one request. */
    public boolean batchRelease() {
      return batchRelease;
    }

    /** Whether the peer takes several fd requests in one request. */
    public boolean batchFds() {
      return batchFds;
    }

    /**
     * Whether the peer answers a replica state request (the in-memory state of a replica being
     * written, which verifies its partial last chunk).
     */
    public boolean replicaState() {
      return replicaState;
    }

    /** Whether the peer answers the liveness PING. */
    public boolean ping() {
      return ping;
    }

    /** Whether the peer speaks any extension. */
    public boolean any() {
      return advertisement != null;
    }

    @Override
    public String toString() {
      return advertisement == null ? "stock" : advertisement;
    }
  }

  /** The remembered answer of one path, with the socket file it came from. */
  private static final class Answer {
    final Object socketIdentity;
    final Features features;

    Answer(Object socketIdentity, Features features) {
      this.socketIdentity = socketIdentity;
      this.features = features;
    }
  }

  /** One path's state: the last answer and whether a probe is running. */
  private static final class PathState {
    final AtomicBoolean probing = new AtomicBoolean();
    volatile Answer answer;
  }

  private final DomainSocketPool pool;
  private final boolean enabled;
  private final ConcurrentHashMap<String, PathState> paths = new ConcurrentHashMap<>();
  private final AtomicLong probes = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();

  /** Told each answer as it is learnt (the process-wide health uses PING where offered). */
  private final java.util.function.BiConsumer<String, Features> onAnswer;

  /**
   * @param pool the connections to probe on
   * @param enabled false: every path is stock and nothing is probed
   */
  public PeerExtensions(DomainSocketPool pool, boolean enabled) {
    this(pool, enabled, (path, features) -> {});
  }

  /**
   * As {@link #PeerExtensions(DomainSocketPool, boolean)}, telling {@code onAnswer} each path's
   * features when they are learnt (on the probing thread).
   */
  public PeerExtensions(
      DomainSocketPool pool,
      boolean enabled,
      java.util.function.BiConsumer<String, Features> onAnswer) {
    this.pool = Objects.requireNonNull(pool, "pool");
    this.enabled = enabled;
    this.onAnswer = Objects.requireNonNull(onAnswer, "onAnswer");
  }

  /** Whether extensions may be used at all ({@code scr.client.extensions.enabled}). */
  public boolean enabled() {
    return enabled;
  }

  /**
   * What the peer at {@code path} offers, probing it (one round trip on a new connection) if this
   * socket file has not been asked yet. {@link Features#STOCK} when disabled, when another thread
   * is probing now, or when the probe could not be made.
   */
  public Features features(String path) {
    if (!enabled) {
      return Features.STOCK;
    }
    Object identity = socketIdentity(path);
    if (identity == null) {
      return Features.STOCK; // no socket file: nothing to talk to now
    }
    PathState state = paths.computeIfAbsent(path, p -> new PathState());
    Answer a = state.answer;
    if (a != null && a.socketIdentity.equals(identity)) {
      return a.features;
    }
    if (!state.probing.compareAndSet(false, true)) {
      return Features.STOCK;
    }
    try {
      a = state.answer;
      if (a != null && a.socketIdentity.equals(identity)) {
        return a.features; // another thread finished the probe in between
      }
      probes.incrementAndGet();
      Features f;
      try {
        f = Features.parse(ShortCircuitExchanges.probeExtensions(pool, path));
      } catch (IOException e) {
        LOG.debug("could not ask {} for extensions ({}); using the stock ops", path, e.toString());
        return Features.STOCK;
      }
      state.answer = new Answer(identity, f);
      onAnswer.accept(path, f);
      LOG.debug("DataNode at {} offers: {}", path, f);
      return f;
    } finally {
      state.probing.set(false);
    }
  }

  /**
   * What the peer at {@code path} offers if that is known for its current socket file (an earlier
   * {@link #features} call probed it); null when unknown. Never probes: for callers that must not
   * add a probe's round trip to their own (prefetch on open).
   */
  public Features knownFeatures(String path) {
    if (!enabled) {
      return Features.STOCK;
    }
    PathState state = paths.get(path);
    Answer a = state == null ? null : state.answer;
    if (a == null) {
      return null;
    }
    Object identity = socketIdentity(path);
    return identity != null && a.socketIdentity.equals(identity) ? a.features : null;
  }

  /**
   * Records that an extension request to {@code path} failed as if the peer did not know op 127 (it
   * closed the connection): the path is stock until its socket file changes.
   */
  public void extensionFailed(String path, String why) {
    failures.incrementAndGet();
    Object identity = socketIdentity(path);
    PathState state = paths.computeIfAbsent(path, p -> new PathState());
    if (identity != null) {
      state.answer = new Answer(identity, Features.STOCK);
    } else {
      state.answer = null;
    }
    onAnswer.accept(path, Features.STOCK);
    LOG.info(
        "DataNode at {} failed an extension request ({}); using the stock ops until it restarts",
        path,
        why);
  }

  /** The socket file's identity (device and inode, modification time), or null if it is gone. */
  private static Object socketIdentity(String path) {
    try {
      BasicFileAttributes attrs = Files.readAttributes(Paths.get(path), BasicFileAttributes.class);
      Object key = attrs.fileKey();
      return (key == null ? "" : key.toString()) + "@" + attrs.lastModifiedTime().toString();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** HELLO probes sent so far (one per DataNode start per path when enabled). */
  public long probeCount() {
    return probes.get();
  }

  /** Extension requests that failed as if the peer did not know op 127. */
  public long extensionFailureCount() {
    return failures.get();
  }

  /** Paths whose last answer offered extensions. */
  public int extendedPathCount() {
    int n = 0;
    for (PathState s : paths.values()) {
      Answer a = s.answer;
      if (a != null && a.features.any()) {
        n++;
      }
    }
    return n;
  }

  /** Paths whose last answer offered extensions, for metrics and {@code scr doctor}. */
  public List<String> extendedPaths() {
    List<String> out = new ArrayList<>();
    paths.forEach(
        (p, s) -> {
          Answer a = s.answer;
          if (a != null && a.features.any()) {
            out.add(p);
          }
        });
    Collections.sort(out);
    return out;
  }
}
