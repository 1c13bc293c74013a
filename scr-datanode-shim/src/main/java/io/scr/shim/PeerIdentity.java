package io.scr.shim;

import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.unix.PeerCredentials;
import java.io.IOException;

/**
 * The client process on the other end of a connection, as the kernel reports it ({@code
 * SO_PEERCRED}), and the key its limits and segment ownership are counted under.
 *
 * <p>The key is the pid when the kernel could name one. A peer in another pid namespace is reported
 * as pid 0; every such process would otherwise share one key with every other, across users (one
 * could exhaust the others' quota and use their segments). Those are keyed by their uid instead:
 * all processes of one uid whose pid is not visible share one client's quota, and no other uid's. A
 * connection whose credentials cannot be read at all is refused by the handler (fail closed).
 *
 * <p>Immutable.
 */
final class PeerIdentity {
  /** Reads a connection's peer credentials. */
  interface Lookup {
    PeerIdentity of(Channel channel) throws IOException;
  }

  /** The production lookup: {@code getsockopt(SO_PEERCRED)} on the unix domain socket. */
  static final Lookup SO_PEERCRED =
      channel -> {
        PeerCredentials c = ((EpollDomainSocketChannel) channel).peerCredentials();
        return new PeerIdentity(c.pid(), c.uid());
      };

  final int pid;
  final int uid;

  PeerIdentity(int pid, int uid) {
    this.pid = pid;
    this.uid = uid;
  }

  /** Whether the pid names a process (not 0: a peer in a pid namespace this one cannot see). */
  boolean pidUsable() {
    return pid > 0;
  }

  /** The pid, or for an unusable pid a negative key for the uid, never equal to a pid. */
  int key() {
    return pidUsable() ? pid : uidKey(uid);
  }

  static int uidKey(int uid) {
    // uids above 2^31 - 1 fold onto lower ones; no distribution allocates them.
    return Integer.MIN_VALUE + (uid & Integer.MAX_VALUE);
  }

  /** How a limit message names the client of {@code key}. */
  static String describe(int key) {
    return key > 0
        ? "client pid " + key
        : "client uid " + (key - Integer.MIN_VALUE) + " (pid not visible: another pid namespace)";
  }

  @Override
  public String toString() {
    return "pid " + pid + " uid " + uid;
  }
}
