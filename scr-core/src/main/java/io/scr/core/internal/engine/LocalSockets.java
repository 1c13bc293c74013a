package io.scr.core.internal.engine;

import io.scr.cache.Ticker;
import io.scr.core.ScrKeys;
import java.io.File;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.net.NetUtils;

/**
 * Which UNIX socket reaches which local DataNode: the templates of {@code scr.client.socket.paths}
 * (else {@code dfs.domain.socket.path}), {@code _PORT} resolved with a DataNode's transfer port
 * when the DataNode is known ({@link #socketPathOf}), or against the socket files in the template's
 * directory when it is not ({@link #localSocketPaths()}, for the replica accessor); and whether an
 * address is this host's (cached per address).
 *
 * <p>Concurrency: thread-safe. The address cache is a concurrent map (two threads resolving one
 * address both ask, one answer wins: benign). The listing of local sockets is an immutable snapshot
 * in a volatile field; two threads refreshing it at once both list the directory and one snapshot
 * wins (benign). Each warning is logged once per engine (a CAS).
 */
final class LocalSockets {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Engine.class);

  private final List<String> pathTemplates;
  private final Ticker ticker;
  private final ConcurrentHashMap<String, Boolean> localAddresses = new ConcurrentHashMap<>();

  /**
   * How long {@link #localSocketPathsRecently()} reuses one listing of the sockets' directories.
   */
  static final long SOCKET_LISTING_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);

  /** The last listing of {@link #localSocketPaths()} (null: none yet); replaced, never mutated. */
  private volatile SocketListing socketListing;

  /**
   * The transfer port {@code dfs.datanode.address} names (0: none), for {@code _PORT} when a socket
   * directory cannot be listed.
   */
  private final int configuredXferPort;

  /** The key the socket path templates come from (for log lines). */
  private final String templateKey;

  /** Whether the no-socket-matches-the-template WARN was logged (once per engine). */
  private final AtomicBoolean noSocketWarned = new AtomicBoolean();

  /** Whether the cannot-list-the-socket-directory WARN was logged (once per engine). */
  private final AtomicBoolean unlistableWarned = new AtomicBoolean();

  /**
   * Lists a socket directory: null when it cannot be listed ({@code File::list}; tests, which may
   * run as root, pass their own: root lists any directory whatever its mode).
   */
  private final Function<File, String[]> directoryLister;

  LocalSockets(Configuration conf, Ticker ticker, Function<File, String[]> directoryLister) {
    this.pathTemplates = socketPathTemplates(conf);
    this.configuredXferPort = configuredXferPort(conf);
    this.templateKey =
        ScrKeys.CLIENT_SOCKET_PATHS.get(conf::get) != null
            ? ScrKeys.CLIENT_SOCKET_PATHS.name()
            : ScrKeys.DFS_DOMAIN_SOCKET_PATH.name();
    this.ticker = ticker;
    this.directoryLister = directoryLister;
  }

  /** The configured templates, in order (empty: none configured). */
  List<String> templates() {
    return pathTemplates;
  }

  /**
   * The socket path of {@code dn} if it is on this host and a path is configured, else null. Counts
   * nothing and ignores backoff.
   */
  String socketPathOf(DatanodeInfo dn) {
    if (pathTemplates.isEmpty() || !isLocal(dn.getIpAddr())) {
      return null;
    }
    return resolve(dn.getXferPort());
  }

  private static List<String> socketPathTemplates(Configuration conf) {
    String explicit = ScrKeys.CLIENT_SOCKET_PATHS.get(conf::get);
    List<String> out = new ArrayList<>();
    String source = explicit != null ? explicit : ScrKeys.DFS_DOMAIN_SOCKET_PATH.get(conf::get);
    for (String p : source.split(",")) {
      String t = p.trim();
      if (!t.isEmpty()) {
        out.add(t);
      }
    }
    return Collections.unmodifiableList(out);
  }

  /** The port of {@code dfs.datanode.address}, or 0 when it names none (or an ephemeral one). */
  private static int configuredXferPort(Configuration conf) {
    String address = ScrKeys.DFS_DATANODE_ADDRESS.get(conf::get);
    if (address == null) {
      return 0;
    }
    int colon = address.lastIndexOf(':');
    try {
      int port = Integer.parseInt(address.substring(colon + 1).trim());
      return port > 0 && port <= 65535 ? port : 0;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * The socket path for a DataNode with transfer port {@code xferPort}: the first template that
   * names {@code _PORT} (resolved), else the first template.
   */
  String resolve(int xferPort) {
    for (String t : pathTemplates) {
      if (t.contains("_PORT")) {
        return t.replace("_PORT", String.valueOf(xferPort));
      }
    }
    return pathTemplates.get(0);
  }

  /**
   * The socket paths of every DataNode on this host that the configuration names without a port to
   * resolve, plus the {@code _PORT} templates resolved against the socket files that exist (for
   * callers that do not know which DataNode holds a block: the replica accessor).
   *
   * <p>A secure layout may let clients traverse the socket directory but not list it (mode 0711).
   * Then {@code _PORT} is resolved with the transfer port {@code dfs.datanode.address} names (one
   * DataNode per host, the common case) and one WARN says so; with several DataNodes on the host
   * the operator lists their sockets in {@code scr.client.socket.paths}. Dropping the template
   * instead would make every read fall back without a word.
   */
  List<String> localSocketPaths() {
    List<String> out = new ArrayList<>();
    String unmatched = null; // a _PORT template that matched no socket file, for the warning
    for (String t : pathTemplates) {
      if (!t.contains("_PORT")) {
        out.add(t);
        continue;
      }
      File template = new File(t);
      File dir = template.getParentFile();
      String name = template.getName();
      int at = name.indexOf("_PORT");
      String[] entries = dir == null || at < 0 ? null : directoryLister.apply(dir);
      if (entries == null && dir != null && at >= 0 && !dir.exists()) {
        // No such directory (as far as this user can see): no DataNode has bound a socket there.
        unmatched = t + " (directory " + dir + " does not exist)";
        continue;
      }
      if (entries == null) {
        String resolved = configuredXferPort > 0 ? resolve(t, configuredXferPort) : null;
        warnUnlistable(t, dir, at < 0, resolved);
        if (resolved != null) {
          out.add(resolved);
        }
        continue;
      }
      String prefix = name.substring(0, at);
      String suffix = name.substring(at + "_PORT".length());
      if (name.indexOf("_PORT", at + 1) >= 0) {
        continue;
      }
      int before = out.size();
      for (String e : entries) {
        if (e.startsWith(prefix)
            && e.endsWith(suffix)
            && e.length() > prefix.length() + suffix.length()) {
          String port = e.substring(prefix.length(), e.length() - suffix.length());
          if (port.chars().allMatch(Character::isDigit)) {
            out.add(new File(dir, e).getPath());
          }
        }
      }
      if (out.size() == before) {
        unmatched = t + " (no matching file in " + dir + ")";
      }
    }
    if (out.isEmpty() && unmatched != null) {
      warnNoSocket(unmatched);
    }
    return out;
  }

  /**
   * Logs once per engine that no socket file matches the configured templates: every read the
   * accessor serves then falls back (NOT_CONFIGURED), which would otherwise go unsaid.
   */
  private void warnNoSocket(String what) {
    if (!noSocketWarned.compareAndSet(false, true)) {
      return;
    }
    LOG.warn(
        "no DataNode socket on this host matches {} = {}: short-circuit reads through the replica"
            + " accessor fall back to TCP (FallbackReason NOT_CONFIGURED) until one appears. A"
            + " stock DataNode binds its socket only when "
            + ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name()
            + "=true in its"
            + " own hdfs-site.xml (and libhadoop loads); the scr shim binds scr.shim.socket.path."
            + " The DataNode log says 'Listening on UNIX domain socket' with the path it uses",
        templateKey,
        what);
  }

  private static String resolve(String template, int port) {
    return template.replace("_PORT", String.valueOf(port));
  }

  /** Logs once per engine that a {@code _PORT} template could not be expanded by listing. */
  private void warnUnlistable(String template, File dir, boolean portInDirectory, String resolved) {
    if (!unlistableWarned.compareAndSet(false, true)) {
      return;
    }
    String why =
        portInDirectory
            ? "its _PORT is in a directory name, so the sockets cannot be found by listing"
            : "this user cannot list the socket directory " + dir + " (e.g. mode 0711)";
    String instead =
        resolved != null
            ? "scr uses the DataNode transfer port of "
                + ScrKeys.DFS_DATANODE_ADDRESS.name()
                + " ("
                + configuredXferPort
                + ") and asks only "
                + resolved
            : "and "
                + ScrKeys.DFS_DATANODE_ADDRESS.name()
                + " names no fixed port, so reads whose DataNode is not known (the replica"
                + " accessor) fall back to TCP";
    LOG.warn(
        "socket path template {} ({}): {}; {}. To let scr find several DataNodes on this host,"
            + " list each socket in {} (comma-separated, explicit paths)",
        template,
        templateKey,
        why,
        instead,
        ScrKeys.CLIENT_SOCKET_PATHS.name());
  }

  /**
   * {@link #localSocketPaths()} as listed at most {@link #SOCKET_LISTING_NANOS} ago, as a new list
   * the caller may change: with a {@code _PORT} template the listing reads a directory, which every
   * read of a block no local DataNode holds would otherwise pay (the accessor asks on every read).
   * A DataNode started since is found a second later.
   */
  List<String> localSocketPathsRecently() {
    long now = ticker.read();
    SocketListing l = socketListing;
    if (l == null || now - l.takenAtNanos >= SOCKET_LISTING_NANOS) {
      l = new SocketListing(now, localSocketPaths());
      socketListing = l;
    }
    return new ArrayList<>(l.paths);
  }

  /** One listing of the local sockets and when it was taken. Immutable. */
  private static final class SocketListing {
    final long takenAtNanos;
    final List<String> paths;

    SocketListing(long takenAtNanos, List<String> paths) {
      this.takenAtNanos = takenAtNanos;
      this.paths = Collections.unmodifiableList(new ArrayList<>(paths));
    }
  }

  boolean isLocal(String ip) {
    Boolean local = localAddresses.get(ip);
    if (local == null) {
      try {
        local = NetUtils.isLocalAddress(InetAddress.getByName(ip));
      } catch (UnknownHostException e) {
        local = Boolean.FALSE;
      }
      localAddresses.put(ip, local);
    }
    return local;
  }
}
