package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.config.ConfigKey;
import java.util.HashMap;
import java.util.Map;

/**
 * Accounting of connections, segments and slots, with limits at three levels:
 *
 * <ul>
 *   <li>the whole shim: open connections ({@code scr.shim.max.connections}, as stock's {@code
 *       dfs.datanode.max.transfer.threads}), refused at accept;
 *   <li>a uid: every process of one user together ({@code scr.shim.uid.max.*}), so a client that
 *       forks does not get fresh quotas with every child;
 *   <li>a client process within its uid ({@code scr.shim.client.max.*}), identified by the pid the
 *       kernel reports for the connection ({@code SO_PEERCRED}): it cannot be forged, and the stock
 *       client spreads one process's work over many connections. A peer whose pid is not visible
 *       (another pid namespace) is counted under its uid ({@link PeerIdentity#key()}).
 * </ul>
 *
 * The {@code pid} parameters here are such keys. A key's uid is the one given when its first
 * connection opened ({@link #openConnection(int, int)}); a key with nothing open is forgotten, so a
 * reused pid starts afresh.
 *
 * <p>Concurrency: every method is {@code synchronized} on this object; each holds the lock for a
 * few map operations only (per connection, segment and slot event, never per byte).
 */
final class ClientLimits {
  /** The uid of a key whose connection was not counted here (tests driving the registry). */
  static final int NO_UID = -1;

  /**
   * What is counted per client and per uid, with the words and keys of its "over the limit" answer.
   * A reservation of {@code n} fails when the holder's count plus {@code n} exceeds the limit.
   */
  private enum Resource {
    CONNECTIONS(
        "connections to this DataNode's scr shim",
        ScrShimKeys.CLIENT_MAX_CONNECTIONS,
        "; close idle connections or raise the limit",
        ScrShimKeys.UID_MAX_CONNECTIONS,
        "; close idle connections or raise the limit"),
    SEGMENTS(
        "shared memory segments",
        ScrShimKeys.CLIENT_MAX_SEGMENTS,
        "",
        ScrShimKeys.UID_MAX_SEGMENTS,
        ""),
    SLOTS(
        "registered slots",
        ScrShimKeys.CLIENT_MAX_SLOTS,
        "; release slots (RELEASE_SHORT_CIRCUIT_FDS) or raise the limit",
        ScrShimKeys.UID_MAX_SLOTS,
        "; release slots (RELEASE_SHORT_CIRCUIT_FDS) or raise the limit"),
    PENDING_FDS(
        "fds not yet handed over",
        ScrShimKeys.CLIENT_MAX_PENDING_FDS,
        "; read the replies already sent",
        ScrShimKeys.UID_MAX_PENDING_FDS,
        "");

    final String what;
    final ConfigKey<Integer> clientKey;
    final String clientAdvice;
    final ConfigKey<Integer> uidKey;
    final String uidAdvice;

    Resource(
        String what,
        ConfigKey<Integer> clientKey,
        String clientAdvice,
        ConfigKey<Integer> uidKey,
        String uidAdvice) {
      this.what = what;
      this.clientKey = clientKey;
      this.clientAdvice = clientAdvice;
      this.uidKey = uidKey;
      this.uidAdvice = uidAdvice;
    }
  }

  private static final int RESOURCES = Resource.values().length;

  /** Per-client limits, indexed by {@link Resource#ordinal()}. */
  private final int[] clientMax = new int[RESOURCES];

  /** Per-uid limits, indexed by {@link Resource#ordinal()}. */
  private final int[] uidMax = new int[RESOURCES];

  private final int totalMaxConnections;
  private final int totalMaxPendingFds;
  private final long maxPendingReplyBytes;

  @GuardedBy("this")
  private final Map<Integer, Usage> clients = new HashMap<>();

  @GuardedBy("this")
  private final Map<Integer, Usage> uids = new HashMap<>();

  @GuardedBy("this")
  private int totalConnections;

  @GuardedBy("this")
  private int totalPendingFds;

  /** Per-process limits only (uids and the whole shim unlimited). */
  ClientLimits(int maxConnections, int maxSegments, int maxSlots) {
    this(
        maxConnections,
        maxSegments,
        maxSlots,
        Integer.MAX_VALUE,
        Integer.MAX_VALUE,
        Integer.MAX_VALUE,
        Integer.MAX_VALUE);
  }

  /** All limits but the pending ones (fds and reply bytes unlimited). */
  ClientLimits(
      int maxConnections,
      int maxSegments,
      int maxSlots,
      int uidMaxConnections,
      int uidMaxSegments,
      int uidMaxSlots,
      int totalMaxConnections) {
    this(
        maxConnections,
        maxSegments,
        maxSlots,
        uidMaxConnections,
        uidMaxSegments,
        uidMaxSlots,
        totalMaxConnections,
        Integer.MAX_VALUE,
        Integer.MAX_VALUE,
        Integer.MAX_VALUE,
        Long.MAX_VALUE);
  }

  ClientLimits(
      int maxConnections,
      int maxSegments,
      int maxSlots,
      int uidMaxConnections,
      int uidMaxSegments,
      int uidMaxSlots,
      int totalMaxConnections,
      int maxPendingFds,
      int uidMaxPendingFds,
      int totalMaxPendingFds,
      long maxPendingReplyBytes) {
    clientMax[Resource.CONNECTIONS.ordinal()] = maxConnections;
    clientMax[Resource.SEGMENTS.ordinal()] = maxSegments;
    clientMax[Resource.SLOTS.ordinal()] = maxSlots;
    clientMax[Resource.PENDING_FDS.ordinal()] = maxPendingFds;
    uidMax[Resource.CONNECTIONS.ordinal()] = uidMaxConnections;
    uidMax[Resource.SEGMENTS.ordinal()] = uidMaxSegments;
    uidMax[Resource.SLOTS.ordinal()] = uidMaxSlots;
    uidMax[Resource.PENDING_FDS.ordinal()] = uidMaxPendingFds;
    this.totalMaxConnections = totalMaxConnections;
    this.totalMaxPendingFds = totalMaxPendingFds;
    this.maxPendingReplyBytes = maxPendingReplyBytes;
  }

  static ClientLimits from(ShimConfig c) {
    return new ClientLimits(
        c.clientMaxConnections,
        c.clientMaxSegments,
        c.clientMaxSlots,
        c.uidMaxConnections,
        c.uidMaxSegments,
        c.uidMaxSlots,
        c.maxConnections,
        c.clientMaxPendingFds,
        c.uidMaxPendingFds,
        c.maxPendingFds,
        c.clientMaxPendingReplyBytes);
  }

  /**
   * Reserves {@code n} fds about to be opened for a reply to client {@code pid}, until they are
   * handed over or closed ({@link #releaseFds}); null, or why not (then nothing is reserved). A
   * client that does not read its replies would otherwise pin up to 252 DataNode fds per connection
   * until the write deadline, and the DataNode's fd limit is shared by every client and by the
   * DataNode's own block I/O.
   */
  synchronized String reserveFds(int pid, int n) {
    String over = reserve(pid, NO_UID, Resource.PENDING_FDS, n);
    if (over == null && totalPendingFds + n > totalMaxPendingFds) {
      release(pid, Resource.PENDING_FDS, n);
      over =
          "the scr shim already has "
              + totalPendingFds
              + " fds not yet handed over, the limit ("
              + ScrShimKeys.MAX_PENDING_FDS
              + "="
              + totalMaxPendingFds
              + ")";
    }
    if (over == null) {
      totalPendingFds += n;
    }
    return over;
  }

  synchronized void releaseFds(int pid, int n) {
    totalPendingFds -= n;
    release(pid, Resource.PENDING_FDS, n);
  }

  /**
   * Reserves {@code n} bytes of a reply queued for client {@code pid} until it is written ({@link
   * #releaseReplyBytes}); false when the client already has {@code
   * scr.shim.client.max.pending.reply.bytes} unread (then nothing is reserved).
   */
  synchronized boolean reserveReplyBytes(int pid, long n) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage(NO_UID));
    if (u.pendingReplyBytes + n > maxPendingReplyBytes && u.pendingReplyBytes > 0) {
      dropIfIdle(pid, u);
      return false; // (one reply is always allowed, whatever its size: requests are bounded)
    }
    u.pendingReplyBytes += n;
    return true;
  }

  synchronized void releaseReplyBytes(int pid, long n) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.pendingReplyBytes -= n;
      dropIfIdle(pid, u);
    }
  }

  /** Fds reserved and not yet released, shim-wide (for tests and diagnostics). */
  synchronized int pendingFds() {
    return totalPendingFds;
  }

  /**
   * Admits a connection to the shim as a whole; null, or why not (then nothing counted and the
   * connection is closed at once, as stock closes a connection over {@code max.transfer.threads}).
   * Every admitted connection is released with {@link #releaseAccepted()}.
   */
  synchronized String acceptConnection() {
    if (totalConnections >= totalMaxConnections) {
      return "the scr shim already has "
          + totalConnections
          + " open connections, the limit ("
          + ScrShimKeys.MAX_CONNECTIONS
          + "="
          + totalMaxConnections
          + ")";
    }
    totalConnections++;
    return null;
  }

  synchronized void releaseAccepted() {
    totalConnections--;
  }

  /** Counts the first connection of key {@code pid} (only for tests: no uid). */
  synchronized String openConnection(int pid) {
    return openConnection(pid, NO_UID);
  }

  /**
   * Counts a new connection of client {@code pid} of user {@code uid}; returns null, or why it
   * exceeds the client's or the uid's limit (then nothing is counted).
   */
  synchronized String openConnection(int pid, int uid) {
    return reserve(pid, uid, Resource.CONNECTIONS, 1);
  }

  synchronized void closeConnection(int pid) {
    release(pid, Resource.CONNECTIONS, 1);
  }

  /** Counts a new segment; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSegment(int pid) {
    return reserve(pid, NO_UID, Resource.SEGMENTS, 1);
  }

  synchronized void removeSegment(int pid) {
    release(pid, Resource.SEGMENTS, 1);
  }

  /** Counts a new slot; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSlot(int pid) {
    return reserve(pid, NO_UID, Resource.SLOTS, 1);
  }

  synchronized void removeSlots(int pid, int n) {
    release(pid, Resource.SLOTS, n);
  }

  /** Number of client processes with anything open. */
  synchronized int clientCount() {
    return clients.size();
  }

  /** Number of uids with anything open (for tests and diagnostics). */
  synchronized int uidCount() {
    return uids.size();
  }

  /**
   * Counts {@code n} of {@code r} for client {@code pid} and its uid; null, or why that exceeds the
   * client's or the uid's limit (then nothing is counted). A client seen for the first time is
   * filed under {@code uidIfNew}.
   */
  @GuardedBy("this")
  private String reserve(int pid, int uidIfNew, Resource r, int n) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage(uidIfNew));
    String over = reserveCheck(pid, u, r, n);
    if (over != null) {
      dropIfIdle(pid, u);
      return over;
    }
    u.held[r.ordinal()] += n;
    Usage uu = uidUsage(u);
    if (uu != null) {
      uu.held[r.ordinal()] += n;
    }
    return null;
  }

  /** Why {@code n} more of {@code r} exceeds client {@code pid}'s or its uid's limit, or null. */
  @GuardedBy("this")
  private String reserveCheck(int pid, Usage u, Resource r, int n) {
    int i = r.ordinal();
    if (u.held[i] + n > clientMax[i]) {
      return over(PeerIdentity.describe(pid), u.held[i], r, r.clientKey, clientMax[i])
          + r.clientAdvice;
    }
    if (u.uid != NO_UID) {
      Usage uu = uids.get(u.uid);
      int uidHeld = uu == null ? 0 : uu.held[i];
      if (uidHeld + n > uidMax[i]) {
        return over(describeUid(u.uid), uidHeld, r, r.uidKey, uidMax[i]) + r.uidAdvice;
      }
    }
    return null;
  }

  @GuardedBy("this")
  private void release(int pid, Resource r, int n) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.held[r.ordinal()] -= n;
      Usage uu = uidUsage(u);
      if (uu != null) {
        uu.held[r.ordinal()] -= n;
      }
      dropIfIdle(pid, u);
    }
  }

  private static String over(String who, int held, Resource r, ConfigKey<Integer> key, int limit) {
    return who
        + " already holds "
        + held
        + " "
        + r.what
        + ", the limit ("
        + key
        + "="
        + limit
        + ")";
  }

  private static String describeUid(int uid) {
    return "user uid " + uid + " (all its client processes together)";
  }

  @GuardedBy("this")
  private Usage uidUsage(Usage u) {
    return u.uid == NO_UID ? null : uids.computeIfAbsent(u.uid, k -> new Usage(k));
  }

  @GuardedBy("this")
  private void dropIfIdle(int pid, Usage u) {
    if (u.idle()) {
      clients.remove(pid);
    }
    if (u.uid != NO_UID) {
      Usage uu = uids.get(u.uid);
      if (uu != null && uu.idle()) {
        uids.remove(u.uid);
      }
    }
  }

  private static final class Usage {
    final int uid;

    /** Counts held, indexed by {@link Resource#ordinal()}. */
    final int[] held = new int[RESOURCES];

    long pendingReplyBytes;

    Usage(int uid) {
      this.uid = uid;
    }

    boolean idle() {
      for (int h : held) {
        if (h > 0) {
          return false;
        }
      }
      return pendingReplyBytes <= 0;
    }
  }
}
