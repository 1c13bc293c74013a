package io.scr.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What a cluster of {@link ChildJvm}s on this host needs around its processes: Hadoop site files
 * and a log4j configuration for their configuration directories, free loopback ports, the socket
 * path rules stock libhadoop and the shim enforce, and deleting the tree afterwards. Only the JDK:
 * a module that keeps Hadoop's and HBase's jars off its own class path can use it.
 *
 * <p>Stateless; every method is thread-safe.
 */
public final class ClusterTree {
  private ClusterTree() {}

  /**
   * A Hadoop configuration file ({@code core-site.xml}, {@code hdfs-site.xml}, ...) of {@code
   * props}.
   */
  public static String siteXml(Map<String, String> props) {
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    props.forEach(
        (k, v) ->
            sb.append("  <property><name>")
                .append(escape(k))
                .append("</name><value>")
                .append(escape(v))
                .append("</value></property>\n"));
    return sb.append("</configuration>\n").toString();
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  /**
   * A log4j 1 {@code log4j.properties} that writes every line to stderr (the child's log) at {@code
   * rootLevel}, with {@code loggerLevels} for named loggers.
   */
  public static String log4jProperties(String rootLevel, Map<String, String> loggerLevels) {
    StringBuilder sb =
        new StringBuilder()
            .append("log4j.rootLogger=")
            .append(rootLevel)
            .append(", err\n")
            .append("log4j.appender.err=org.apache.log4j.ConsoleAppender\n")
            .append("log4j.appender.err.target=System.err\n")
            .append("log4j.appender.err.layout=org.apache.log4j.PatternLayout\n")
            .append(
                "log4j.appender.err.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p [%t] %c{2}:"
                    + " %m%n\n");
    loggerLevels.forEach(
        (logger, level) ->
            sb.append("log4j.logger.").append(logger).append('=').append(level).append('\n'));
    return sb.toString();
  }

  /**
   * The loggers a DataNode and a NameNode write a line to per block or per read at INFO: quiet, so
   * a child's log stays readable and its disk writes out of the figures.
   */
  public static final Map<String, String> QUIET_HDFS_LOGGERS =
      orderedMap(
          "org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace", "WARN",
          "org.apache.hadoop.hdfs.StateChange", "WARN",
          "BlockStateChange", "WARN");

  private static Map<String, String> orderedMap(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return Collections.unmodifiableMap(m);
  }

  /**
   * The {@code hdfs-site.xml} settings of a NameNode on this host that a test or benchmark starts
   * and waits for: its name directory, RPC on {@code 127.0.0.1:rpcPort}, HTTP on any free port, out
   * of safe mode as soon as it starts, any block size allowed (tests write small blocks).
   */
  public static Map<String, String> nameNodeSite(Path nameDir, int rpcPort) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("dfs.namenode.name.dir", nameDir.toUri().toString());
    m.put("dfs.namenode.rpc-address", "127.0.0.1:" + rpcPort);
    m.put("dfs.namenode.http-address", "127.0.0.1:0");
    m.put("dfs.namenode.safemode.extension", "0");
    m.put("dfs.namenode.safemode.min.datanodes", "0");
    m.put("dfs.namenode.fs-limits.min-block-size", "0");
    return m;
  }

  /**
   * Deletes {@code dirs} unless the system property {@code keepProperty} is true, then prints where
   * they are kept (a failed run's logs are read afterwards).
   */
  public static void deleteUnlessKept(String keepProperty, String who, Path... dirs)
      throws IOException {
    if (Boolean.getBoolean(keepProperty)) {
      System.err.println(who + ": kept " + Arrays.toString(dirs));
      return;
    }
    for (Path d : dirs) {
      deleteRecursively(d);
    }
  }

  /**
   * {@code n} distinct ports free on {@code address} now (all held open together while chosen, so
   * none repeats); another process may take one before the child binds it.
   */
  public static int[] freePorts(InetAddress address, int n) throws IOException {
    List<ServerSocket> open = new ArrayList<>();
    try {
      int[] out = new int[n];
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0, 1, address);
        open.add(s);
        out[i] = s.getLocalPort();
      }
      return out;
    } finally {
      for (ServerSocket s : open) {
        s.close();
      }
    }
  }

  /**
   * Null when {@code dir} and every parent are owned by root or {@code uid} and neither
   * world-writable nor writable by a group other than root (stock libhadoop's rules, no sticky-bit
   * exemption; the shim's are the same); else the first offending component and why.
   */
  public static String socketPathProblem(Path dir, int uid) {
    for (Path d = dir; d != null; d = d.getParent()) {
      try {
        int mode = (Integer) Files.getAttribute(d, "unix:mode");
        int owner = (Integer) Files.getAttribute(d, "unix:uid");
        int group = (Integer) Files.getAttribute(d, "unix:gid");
        if ((mode & 0002) != 0
            || ((mode & 0020) != 0 && group != 0)
            || (owner != 0 && owner != uid)) {
          return d + " is mode " + Integer.toOctalString(mode & 07777) + ", owner " + owner;
        }
      } catch (IOException e) {
        return d + ": " + e;
      }
    }
    return null;
  }

  /** Deletes {@code root} and everything below it; nothing when it does not exist. */
  public static void deleteRecursively(Path root) throws IOException {
    if (root == null || !Files.exists(root)) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      for (Path f : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(f);
      }
    }
  }
}
