package io.scr.shim;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.HashMap;
import java.util.Map;

/**
 * Per-client accounting of connections, segments and slots, with limits. A client is a peer
 * process, identified by the pid the kernel reports for the connection ({@code SO_PEERCRED}): it
 * cannot be forged, and the stock client spreads one process's work over many connections. A peer
 * whose pid is not visible (another pid namespace) is counted under its uid ({@link
 * PeerIdentity#key()}): the {@code pid} parameters here are such keys.
 *
 * <p>Concurrency: every method is {@code synchronized} on this object; each holds the lock for a
 * few map operations only (per connection, segment and slot event, never per byte).
 */
final class ClientLimits {
  private final int maxConnections;
  private final int maxSegments;
  private final int maxSlots;

  @GuardedBy("this")
  private final Map<Integer, Usage> clients = new HashMap<>();

  ClientLimits(int maxConnections, int maxSegments, int maxSlots) {
    this.maxConnections = maxConnections;
    this.maxSegments = maxSegments;
    this.maxSlots = maxSlots;
  }

  /** Counts a new connection; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String openConnection(int pid) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage());
    if (u.connections >= maxConnections) {
      dropIfIdle(pid, u);
      return PeerIdentity.describe(pid)
          + " already holds "
          + u.connections
          + " connections to this DataNode's scr shim, the limit ("
          + ScrShimKeys.CLIENT_MAX_CONNECTIONS
          + "="
          + maxConnections
          + "); close idle connections or raise the limit";
    }
    u.connections++;
    return null;
  }

  synchronized void closeConnection(int pid) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.connections--;
      dropIfIdle(pid, u);
    }
  }

  /** Counts a new segment; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSegment(int pid) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage());
    if (u.segments >= maxSegments) {
      dropIfIdle(pid, u);
      return PeerIdentity.describe(pid)
          + " already holds "
          + u.segments
          + " shared memory segments, the limit ("
          + ScrShimKeys.CLIENT_MAX_SEGMENTS
          + "="
          + maxSegments
          + ")";
    }
    u.segments++;
    return null;
  }

  synchronized void removeSegment(int pid) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.segments--;
      dropIfIdle(pid, u);
    }
  }

  /** Counts a new slot; returns null, or why it exceeds the limit (then nothing counted). */
  synchronized String addSlot(int pid) {
    Usage u = clients.computeIfAbsent(pid, p -> new Usage());
    if (u.slots >= maxSlots) {
      dropIfIdle(pid, u);
      return PeerIdentity.describe(pid)
          + " already holds "
          + u.slots
          + " registered slots, the limit ("
          + ScrShimKeys.CLIENT_MAX_SLOTS
          + "="
          + maxSlots
          + "); release slots (RELEASE_SHORT_CIRCUIT_FDS) or raise the limit";
    }
    u.slots++;
    return null;
  }

  synchronized void removeSlots(int pid, int n) {
    Usage u = clients.get(pid);
    if (u != null) {
      u.slots -= n;
      dropIfIdle(pid, u);
    }
  }

  /** Number of client processes with anything open. */
  synchronized int clientCount() {
    return clients.size();
  }

  @GuardedBy("this")
  private void dropIfIdle(int pid, Usage u) {
    if (u.connections <= 0 && u.segments <= 0 && u.slots <= 0) {
      clients.remove(pid);
    }
  }

  private static final class Usage {
    int connections;
    int segments;
    int slots;
  }
}
