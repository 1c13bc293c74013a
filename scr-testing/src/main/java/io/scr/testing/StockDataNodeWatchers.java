package io.scr.testing;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.ShortCircuitRegistry;
import org.apache.hadoop.net.unix.DomainSocket;
import org.apache.hadoop.net.unix.DomainSocketWatcher;
import org.apache.hadoop.util.ServicePlugin;
import org.apache.hadoop.util.VersionInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes the notification socket a stock DataNode's {@link DomainSocketWatcher} leaves open when
 * its thread dies, so that a test's leak check counts scr's resources, not stock's.
 *
 * <p><b>The stock bug</b> (Hadoop 3.4.2, seen in CI during a DataNode restart with a client's
 * segment request in flight): the DataNode's shutdown closes a socket its watcher still polls; the
 * watcher thread dies on {@code "file descriptor N was closed while still in the poll(2) loop"},
 * and its cleanup dies too ({@code ShortCircuitRegistry.removeShm}: "failed to remove", the
 * segment's handler run a second time). The watcher's end of its own socket pair, whose reference
 * the dead thread still holds, then stays open for the life of the JVM: a connected UNIX socket
 * without a path, found by {@link ResourceSnapshot#leakedSince} however long it waits. A DataNode
 * process that is shutting down loses nothing by it; a test JVM that runs many DataNodes must close
 * it.
 *
 * <p>{@link MiniDfs} in {@link DataNodeMode#STOCK_SCR} loads this class as a {@code
 * dfs.datanode.plugins} plugin to see every DataNode it starts, restarts included (a restart makes
 * a new {@code DataNode}; the cluster forgets the old one), and calls {@link #closeLeaked} after
 * the cluster shut down. Only watchers whose thread has ended are touched, and each socket closed
 * is logged with the cause.
 *
 * <p><b>Concurrency contract.</b> DataNodes register from their start-up threads; {@link
 * #closeLeaked} runs on the thread closing the cluster. The registry is a concurrent queue.
 */
public final class StockDataNodeWatchers implements ServicePlugin {
  private static final Logger LOG = LoggerFactory.getLogger(StockDataNodeWatchers.class);

  /** Configuration key naming the cluster a DataNode belongs to (the client context). */
  private static final String CLUSTER_KEY = "dfs.client.context";

  /** DataNodes started with this plugin and not yet audited. */
  private static final ConcurrentLinkedQueue<DataNode> STARTED = new ConcurrentLinkedQueue<>();

  /** Called by the DataNode (plugins need a public no-argument constructor). */
  public StockDataNodeWatchers() {}

  @Override
  public void start(Object service) {
    if (service instanceof DataNode) {
      STARTED.add((DataNode) service);
    }
  }

  @Override
  public void stop() {
    // The watcher closes after the plugins stop: the audit runs after the cluster's shutdown.
  }

  @Override
  public void close() {}

  /** Whether {@code dataNode} registered here (the plugin is loaded) and awaits its audit. */
  static boolean tracks(DataNode dataNode) {
    return STARTED.contains(dataNode);
  }

  /**
   * After the cluster of {@code conf} shut down: closes the notification sockets of every watcher
   * of its DataNodes whose thread died, and forgets those DataNodes; returns how many sockets it
   * closed.
   */
  static int closeLeaked(Configuration conf) {
    String cluster = conf.get(CLUSTER_KEY);
    List<DataNode> mine = new ArrayList<>();
    for (DataNode dn : STARTED) {
      if (Objects.equals(cluster, dn.getConf().get(CLUSTER_KEY))) {
        mine.add(dn);
      }
    }
    STARTED.removeAll(mine);
    int closed = 0;
    for (DataNode dn : mine) {
      ShortCircuitRegistry registry = dn.getShortCircuitRegistry();
      if (registry != null) {
        closed += closeLeaked(field(registry, "watcher", DomainSocketWatcher.class), dn.toString());
      }
    }
    return closed;
  }

  /**
   * Closes (forcibly: the dead thread still holds a reference) the open notification sockets of a
   * watcher whose thread has ended; a watcher still running is left alone. Returns the count.
   */
  static int closeLeaked(DomainSocketWatcher watcher, String owner) {
    if (watcher == null || field(watcher, "watcherThread", Thread.class).isAlive()) {
      return 0;
    }
    Method forceClose = forceClose();
    int closed = 0;
    for (DomainSocket socket : field(watcher, "notificationSockets", DomainSocket[].class)) {
      if (socket != null && socket.isOpen()) {
        if (forceClose == null) {
          LOG.warn(
              "{} of {} ended with {} open, and this Hadoop ({}) has no DomainSocket.close(boolean)"
                  + " to force it closed (close() would wait for the dead thread's reference"
                  + " forever): left open",
              watcher,
              owner,
              socket,
              VersionInfo.getVersion());
          continue;
        }
        try {
          forceClose.invoke(socket, true);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException("cannot close " + socket + " of " + owner, e);
        }
        closed++;
      }
    }
    if (closed > 0) {
      LOG.warn(
          "{} of {} ended with {} notification socket(s) open (its thread died: the stock"
              + " DataNode closed a socket it still polled; see its ERROR above); closed them so"
              + " the leak check counts only scr's resources",
          watcher,
          owner,
          closed);
    }
    return closed;
  }

  /**
   * {@code DomainSocket.close(boolean force)}, which Hadoop 3.4 added; null on Hadoop 3.3, whose
   * {@code close()} waits for every reference to be released (never, for a dead thread's).
   */
  private static Method forceClose() {
    try {
      return DomainSocket.class.getMethod("close", boolean.class);
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  private static <T> T field(Object owner, String name, Class<T> type) {
    try {
      Field f = owner.getClass().getDeclaredField(name);
      f.setAccessible(true);
      return type.cast(f.get(owner));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "cannot read "
              + owner.getClass().getName()
              + "."
              + name
              + " (a Hadoop other than 3.4.2?); update StockDataNodeWatchers",
          e);
    }
  }
}
