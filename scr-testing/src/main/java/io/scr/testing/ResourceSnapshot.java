package io.scr.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The threads and file descriptors of this JVM at one moment, to prove that a component gives back
 * everything it took.
 *
 * <p>{@link #leakedSince} compares a later state with this one. It ignores what a JVM acquires once
 * and keeps on purpose: jar files opened by class loading and a short list of process-wide Hadoop
 * and JDK daemon threads (see {@link #JVM_SINGLETON_THREADS}); everything else that appeared is a
 * leak. Event-loop fds ({@code anon_inode:[eventpoll]}, {@code [eventfd]}) are judged by their
 * threads: they close when the loop's thread ends, which the thread check already watches.
 */
public final class ResourceSnapshot {
  /**
   * Threads that Hadoop or the JDK start once per JVM and never stop; a second cluster reuses them,
   * so they are not leaks.
   */
  static final Pattern JVM_SINGLETON_THREADS =
      Pattern.compile(
          "org\\.apache\\.hadoop\\.fs\\.FileSystem\\$Statistics\\$StatisticsDataReferenceCleaner"
              + "|process reaper.*|Common-Cleaner|Attach Listener|Signal Dispatcher"
              + "|surefire-forkedjvm-.*|ForkJoinPool\\.commonPool-worker-.*"
              + "|Timer for '.*' metrics system|GcTimeMonitor.*|java-sdk-http-connection-reaper"
              + "|IPC Parameter Sending Thread.*|Keep-Alive-Timer|SSL Certificates Store Monitor"
              + "|ForkJoinPool-\\d+-worker-\\d+|Log4j2?-.*|AsyncAppender-.*"
              // the DataNode's static ReadaheadPool.getInstance(), never shut down:
              + "|Readahead Thread #\\d+"
              // static java.lang.ref.Cleaner instances: junixsocket's CleanableState (unnamed),
              // scr-shm's ShmCleaner; jnr-ffi's static NativeFinalizer reference-queue thread:
              + "|Cleaner-\\d+|scr-shm-cleaner|jnr\\.ffi\\.util\\.ref\\.internal\\.Finalizer"
              // a DataNode's FsDatasetCache uncaching executor: Hadoop 3.4.2 never shuts it down,
              // its idle thread ends after a 60 s keep-alive (only where a test caches blocks):
              + "|FsDatasetCache-\\d+-.*"
              // per dfs.client.context, static in ClientContext, no public close:
              + "|org\\.apache\\.hadoop\\.hdfs\\.PeerCache@.*"
              // a DFSClient's renewer outlives its last client by a 60 s grace period:
              + "|LeaseRenewer:.*"
              // DFSClient's static hedged-read pool (dfs.client.hedged.read.threadpool.size),
              // never shut down; its idle threads end after 60 s:
              + "|hedgedRead-\\d+"
              // scr's process-wide DataNode health probe: a dead DataNode is probed up to 60 s
              // after the last read asked (a restart is seen without a reader), and the thread
              // ends then, or when the process's last engine closes (DataNodeHealthTest):
              + "|scr-health-probe"
              // a JMX client's RMI runtime (scr doctor --pid in a test), JVM-wide once used:
              + "|RMI GC Daemon|RMI Scheduler\\(\\d+\\)|RMI RenewClean-.*");

  /** The directory handle of a /proc/self/fd listing itself (ours or a concurrent one). */
  private static final Pattern SELF_FD_LISTING = Pattern.compile("/proc/\\d+/fd");

  private final Map<Long, String> threads;
  private final Map<String, String> fds;

  private ResourceSnapshot(Map<Long, String> threads, Map<String, String> fds) {
    this.threads = threads;
    this.fds = fds;
  }

  /** Takes a snapshot now. */
  public static ResourceSnapshot take() {
    Map<Long, String> threads = new HashMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive()) {
        threads.put(t.getId(), t.getName());
      }
    }
    return new ResourceSnapshot(threads, openFds());
  }

  /** fd number → link target, from /proc/self/fd; empty where /proc is missing. */
  public static Map<String, String> openFds() {
    Path dir = Paths.get("/proc/self/fd");
    Map<String, String> fds = new HashMap<>();
    if (!Files.isDirectory(dir)) {
      return fds;
    }
    try (Stream<Path> list = Files.list(dir)) {
      for (Path p : (Iterable<Path>) list::iterator) {
        try {
          String target = Files.readSymbolicLink(p).toString();
          if (!SELF_FD_LISTING.matcher(target).matches()) {
            fds.put(p.getFileName().toString(), target);
          }
        } catch (IOException e) {
          // the fd closed between list and readlink, or it was the listing's own fd
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list /proc/self/fd", e);
    }
    return fds;
  }

  /** Number of open fds of this process. */
  public static int openFdCount() {
    return openFds().size();
  }

  /**
   * The file mappings of this process that belong to a cluster or to shared memory: one entry per
   * mapping ({@code "start-end path"}, from /proc/self/maps) whose file lies under one of {@code
   * roots} (block and meta files), is a memfd or lies under /dev/shm (shared-memory segments).
   * Empty where /proc is missing. Compare two calls to find mappings a component left behind.
   */
  public static Set<String> clusterMappings(Collection<Path> roots) {
    Path maps = Paths.get("/proc/self/maps");
    if (!Files.isReadable(maps)) {
      return Collections.emptySet();
    }
    List<String> lines;
    try {
      lines = Files.readAllLines(maps);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read /proc/self/maps", e);
    }
    Set<String> out = new java.util.TreeSet<>();
    for (String line : lines) {
      // start-end perms offset dev inode path
      String[] cols = line.trim().split("\\s+", 6);
      if (cols.length < 6) {
        continue;
      }
      String path = cols[5];
      if (path.startsWith("/memfd:") || path.startsWith("/dev/shm/") || isUnder(path, roots)) {
        out.add(cols[0] + " " + path);
      }
    }
    return out;
  }

  /**
   * Bytes held by direct {@link java.nio.ByteBuffer}s now (the platform's "direct" buffer pool); -1
   * if the JVM has none. Call {@link System#gc()} first, and poll: buffers nobody references are
   * freed by their cleaner shortly after a collection.
   */
  public static long directMemoryUsed() {
    for (java.lang.management.BufferPoolMXBean pool :
        java.lang.management.ManagementFactory.getPlatformMXBeans(
            java.lang.management.BufferPoolMXBean.class)) {
      if (pool.getName().equals("direct")) {
        return pool.getMemoryUsed();
      }
    }
    return -1;
  }

  /**
   * Waits up to {@code patience} for resources acquired after this snapshot to be released and
   * returns what is still held (empty when nothing leaked).
   */
  public List<String> leakedSince(Duration patience) {
    return leakedSince(patience, Collections.emptyList());
  }

  /**
   * Like {@link #leakedSince(Duration)}, but when {@code fdRoots} is not empty only fds whose
   * target lies under one of those paths (or is a memfd) count as leaks. A JVM's first cluster
   * opens process-wide singletons (random sources, selectors) that later clusters reuse; checking
   * its fds against the files the cluster owns keeps the check exact without false alarms.
   */
  public List<String> leakedSince(Duration patience, Collection<Path> fdRoots) {
    long deadline = System.nanoTime() + patience.toNanos();
    List<String> leaks;
    while (true) {
      leaks = currentLeaks(fdRoots);
      if (leaks.isEmpty() || System.nanoTime() > deadline) {
        return leaks;
      }
      try {
        Thread.sleep(50); // threads and sockets wind down asynchronously; nothing to latch on
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return leaks;
      }
    }
  }

  private List<String> currentLeaks(Collection<Path> fdRoots) {
    List<String> leaks = new ArrayList<>();
    Predicate<String> singleton = name -> JVM_SINGLETON_THREADS.matcher(name).matches();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && !threads.containsKey(t.getId()) && !singleton.test(t.getName())) {
        leaks.add("thread '" + t.getName() + "' (" + t.getState() + ")");
      }
    }
    Set<String> now =
        openFds().entrySet().stream()
            .filter(e -> !e.getValue().endsWith(".jar") && !e.getValue().endsWith(".so"))
            // An event loop's epoll and eventfd close when its thread ends, and a live event
            // loop thread is reported above; Netty's graceful shutdown can outlast the patience.
            .filter(e -> !e.getValue().startsWith("anon_inode:[event"))
            .filter(e -> !e.getValue().equals(fds.get(e.getKey())))
            .filter(e -> fdRoots.isEmpty() || isUnder(e.getValue(), fdRoots))
            .map(e -> "fd " + e.getKey() + " -> " + describe(e.getValue()))
            // The JVM's attach listener (jstack, jcmd) binds /tmp/.java_pid<pid>: not ours.
            .filter(d -> !d.contains("/.java_pid"))
            .collect(Collectors.toSet());
    leaks.addAll(now);
    return leaks;
  }

  /** Adds the socket's kind and addresses to a {@code socket:[inode]} link target. */
  static String describe(String target) {
    if (!target.startsWith("socket:[")) {
      return target;
    }
    String inode = target.substring("socket:[".length(), target.length() - 1);
    for (String table : List.of("unix", "tcp", "tcp6")) {
      try {
        for (String line : Files.readAllLines(Paths.get("/proc/net/" + table))) {
          String[] cols = line.trim().split("\\s+");
          int inodeCol = table.equals("unix") ? 6 : 9;
          if (cols.length > inodeCol && cols[inodeCol].equals(inode)) {
            return target + " " + table + " " + line.trim();
          }
        }
      } catch (IOException e) {
        // /proc/net missing: report the bare inode
      }
    }
    return target;
  }

  private static boolean isUnder(String target, Collection<Path> roots) {
    if (target.startsWith("/memfd:")) {
      return true;
    }
    for (Path root : roots) {
      if (target.startsWith(root.toAbsolutePath().toString())) {
        return true;
      }
    }
    return false;
  }
}
