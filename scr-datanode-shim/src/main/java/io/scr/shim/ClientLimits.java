package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
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

  private final int maxConnections;
  private final int maxSegments;
  private final int maxSlots;
  private final int uidMaxConnections;
  private final int uidMaxSegments;
  private final int uidMaxSlots;
  private final int totalMaxConnections;
  private final int maxPendingFds;
  private final int uidMaxPendingFds;
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
    this.maxPendingFds = maxPendingFds;
    this.uidMaxPendingFds = uidMaxPendingFds;
    this.totalMaxPendingFds = totalMaxPendingFds;
    this.maxPendingReplyBytes = maxPendingReplyBytes;
    this.maxConnections = maxConnections;
    this.maxSegments = maxSegments;
    this.maxSlots = maxSlots;
    this.uidMaxConnections = uidMaxConnections;
    this.uidMaxSegments = uidMaxSegments;
    this.uidMaxSlots = uidMaxSlots;
    this.totalMaxConnections = totalMaxConnections;
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
    Usage u = clients.computeIfAbsent(pid, p -> new Usage(NO_UID));
    Usage uu = uidUsage(u);
    String over = null;
    if (u.pendingFds + n > maxPendingFds) {
      over =
          over(PeerIdentity.describe(pid), u.pendingFds, "fds not yet handed over")
              + ScrShimKeys.CLIENT_MAX_PENDING_FDS
              + "="
              + maxPendingFds
              + "); read the replies already sent";
    } else if (uu != null && uu.pendingFds + n > uidMaxPendingFds) {
      over =
          over(describeUid(u.uid), uu.pendingFds, "fds not yet handed over")
              + ScrShimKeys.UID_MAX_PENDING_FDS
              + "="
              + uidMaxPendingFds
              + ")";
    } else if (totalPendingFds + n > totalMaxPendingFds) {
      over =
          "the scr shim already has "
              + totalPendingFds
              + " fds not yet handed over, the limit ("
              + ScrShimKeys.MAX_PENDING_FDS
              + "="
              + totalMaxPendingFds
              + ")";
    }
    if (over != null) {
      dropIfIdle(pid, u);
      return over;
    }
    u.pendingFds += n;
    if (uu != null) {
      uu.pendingFds += n;
    }
    totalPendingFds += n;
    return null;
  }

  synchronized void releaseFds(int pid, int n) {
    totalPendingFds -= n;
    Usage u = clients.get(pid);
    if (u != null) {
      u.pendingFds -= n;
      Usage uu = uidUsage(u);
      if (uu != null) {
        uu.pendingFds -= n;
      }
      dropIfIdle(pid, u);
    }
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
    Usage u = clients.get(pid);
    if (u == null) {
      u = new Usage(uid);
      clients.put(pid, u);
    }
    Usage uu = uidUsage(u);
    String over = null;
    if (u.connections >= maxConnections) {
      over =
          over(PeerIdentity.describe(pid), u.connections, "connections to this DataNode's scr shim")
              + ScrShimKeys.CLIENT_MAX_CONNECTIONS
              + "="
              + maxConnections
              + "); close idle connections or raise the limit";
    } else if (uu != null && uu.connections >= uidMaxConnections) {
      over =
          over(describeUid(u.uid), uu.connections, "connections to this DataNode's scr shim")
              + ScrShimKeys.UID_MAX_CONNECTIONS
              + "="
              + uidMaxConnections
              + "); close idle connections or raise the limit";
    }
    if (over != null) {
      dropIfIdle(pid, u);
      return over;
    }
    u.connections++;
    if (uu != null) {
      uu.connections++;
    }
    return null;
  }

  synchronized void closeConnection(int pid) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.connections--;
      Usage uu = uidUsage(u);
      if (uu != null) {
        uu.connections--;
      }
      dropIfIdle(pid, u);
    }
  }

  /** Counts a new segment; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSegment(int pid) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage(NO_UID));
    Usage uu = uidUsage(u);
    String over = null;
    if (u.segments >= maxSegments) {
      over =
          over(PeerIdentity.describe(pid), u.segments, "shared memory segments")
              + ScrShimKeys.CLIENT_MAX_SEGMENTS
              + "="
              + maxSegments
              + ")";
    } else if (uu != null && uu.segments >= uidMaxSegments) {
      over =
          over(describeUid(u.uid), uu.segments, "shared memory segments")
              + ScrShimKeys.UID_MAX_SEGMENTS
              + "="
              + uidMaxSegments
              + ")";
    }
    if (over != null) {
      dropIfIdle(pid, u);
      return over;
    }
    u.segments++;
    if (uu != null) {
      uu.segments++;
    }
    return null;
  }

  synchronized void removeSegment(int pid) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.segments--;
      Usage uu = uidUsage(u);
      if (uu != null) {
        uu.segments--;
      }
      dropIfIdle(pid, u);
    }
  }

  /** Counts a new slot; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSlot(int pid) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage(NO_UID));
    Usage uu = uidUsage(u);
    String over = null;
    if (u.slots >= maxSlots) {
      over =
          over(PeerIdentity.describe(pid), u.slots, "registered slots")
              + ScrShimKeys.CLIENT_MAX_SLOTS
              + "="
              + maxSlots
              + "); release slots (RELEASE_SHORT_CIRCUIT_FDS) or raise the limit";
    } else if (uu != null && uu.slots >= uidMaxSlots) {
      over =
          over(describeUid(u.uid), uu.slots, "registered slots")
              + ScrShimKeys.UID_MAX_SLOTS
              + "="
              + uidMaxSlots
              + "); release slots (RELEASE_SHORT_CIRCUIT_FDS) or raise the limit";
    }
    if (over != null) {
      dropIfIdle(pid, u);
      return over;
    }
    u.slots++;
    if (uu != null) {
      uu.slots++;
    }
    return null;
  }

  synchronized void removeSlots(int pid, int n) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.slots -= n;
      Usage uu = uidUsage(u);
      if (uu != null) {
        uu.slots -= n;
      }
      dropIfIdle(pid, u);
    }
  }

  /** Number of client processes with anything open. */
  synchronized int clientCount() {
    return clients.size();
  }

  /** Number of uids with anything open (for tests and diagnostics). */
  synchronized int uidCount() {
    return uids.size();
  }

  private static String over(String who, int held, String what) {
    return who + " already holds " + held + " " + what + ", the limit (";
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
    int connections;
    int segments;
    int slots;
    int pendingFds;
    long pendingReplyBytes;

    Usage(int uid) {
      this.uid = uid;
    }

    boolean idle() {
      return connections <= 0
          && segments <= 0
          && slots <= 0
          && pendingFds <= 0
          && pendingReplyBytes <= 0;
    }
  }
}
