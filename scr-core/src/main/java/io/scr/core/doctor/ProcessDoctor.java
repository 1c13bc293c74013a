package io.scr.core.doctor;

import io.scr.core.FallbackReason;
import io.scr.core.ScrKeys;
import io.scr.core.metrics.ClientMetric;
import io.scr.core.metrics.ScrClientDiagnostics;
import io.scr.core.stats.FailureClass;
import io.scr.core.stats.HealthState;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * {@code scr doctor --pid PID}: asks a running JVM (a RegionServer, an executor, a task) what its
 * scr engines are doing, and judges it with the field cases of {@code docs/operations.md}.
 *
 * <p>How it reaches the process: the JDK attach API starts the target's local JMX agent (no port,
 * no configuration, nothing to enable in advance; it needs the same user, or root, and a HotSpot
 * JVM not started with {@code -XX:+DisableAttachMechanism}), then reads each context's {@link
 * ScrClientDiagnostics} MBean twice, {@code window} apart: counters become "in the last N seconds",
 * gauges are read at the end. A metrics HTTP endpoint would need a port the operator opened
 * beforehand and a process that started a metrics system, which Spark executors and MapReduce tasks
 * do not; attach works on every JVM the doctor's user may debug.
 */
final class ProcessDoctor {
  private ProcessDoctor() {}

  /** How to sleep between the two samples (tests pass a shorter window, never a fake clock). */
  interface Sleeper {
    void sleep(Duration d) throws InterruptedException;
  }

  /**
   * Examines process {@code pid}; every problem, including not reaching it, is a finding.
   *
   * <p>The JMX connection goes only to the address the target JVM itself returned through the
   * attach API (its local management agent, loopback only), which the attach socket's owner check
   * restricts to the target's own user or root: no address from configuration or the network.
   */
  @SuppressWarnings("BanJNDI")
  static List<Finding> examine(long pid, Duration window, Sleeper sleeper) {
    String address;
    try {
      address = localJmxAddress(pid);
    } catch (IOException | RuntimeException e) {
      return List.of(
          Finding.fail(
              "process",
              "cannot attach to process " + pid + ": " + e.getMessage(),
              "run scr doctor --pid as the process's own user (sudo -u <user>) or root, with a"
                  + " JDK (jdk.attach); the process must be a running HotSpot JVM not started"
                  + " with -XX:+DisableAttachMechanism"));
    }
    try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
      MBeanServerConnection mbs = c.getMBeanServerConnection();
      Set<ObjectName> names =
          new TreeSet<>(mbs.queryNames(new ObjectName(ScrClientDiagnostics.QUERY), null));
      if (names.isEmpty()) {
        return List.of(
            Finding.fail(
                "process",
                "scr is not loaded in process "
                    + pid
                    + ": it has no scr engine (none is made before the process's first HDFS read"
                    + " through scr)",
                "put scr-bundle-client on the process's class path and wire scr in with"
                    + " dfs.client.replica.accessor.builder.classes or fs.hdfs.impl in the"
                    + " configuration that process reads (docs/user-guide.md); if it is wired, it"
                    + " has not read from HDFS yet"));
      }
      Map<ObjectName, Map<String, Double>> first = new LinkedHashMap<>();
      for (ObjectName n : names) {
        first.put(n, parse((String) mbs.getAttribute(n, "Metrics")));
      }
      sleeper.sleep(window);
      List<Finding> out = new ArrayList<>();
      for (ObjectName n : names) {
        String context = (String) mbs.getAttribute(n, "Context");
        String settings = ((String) mbs.getAttribute(n, "Settings")).trim().replace('\n', ' ');
        Map<String, Double> end = parse((String) mbs.getAttribute(n, "Metrics"));
        out.addAll(judge(pid, context, settings, first.get(n), end, window));
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return List.of(Finding.fail("process", "interrupted while watching process " + pid, ""));
    } catch (IOException | JMException | RuntimeException e) {
      return List.of(
          Finding.fail(
              "process",
              "cannot read scr's state from process " + pid + ": " + e,
              "run scr doctor --pid again; if it persists, read the metrics in the process's"
                  + " own logs (the scr summary line) or its JMX (io.scr:type=ScrClient)"));
    }
  }

  private static String localJmxAddress(long pid) throws IOException {
    com.sun.tools.attach.VirtualMachine vm;
    try {
      vm = com.sun.tools.attach.VirtualMachine.attach(Long.toString(pid));
    } catch (com.sun.tools.attach.AttachNotSupportedException e) {
      throw new IOException(e.getMessage(), e);
    }
    try {
      return vm.startLocalManagementAgent();
    } finally {
      vm.detach();
    }
  }

  static Map<String, Double> parse(String lines) {
    Map<String, Double> out = new LinkedHashMap<>();
    for (String line : lines.split("\n")) {
      int eq = line.lastIndexOf('=');
      if (eq > 0) {
        try {
          out.put(line.substring(0, eq), Double.parseDouble(line.substring(eq + 1)));
        } catch (NumberFormatException e) {
          // not a figure; nothing to judge
        }
      }
    }
    return out;
  }

  /** The findings for one context from two samples {@code window} apart. */
  static List<Finding> judge(
      long pid,
      String context,
      String settings,
      Map<String, Double> start,
      Map<String, Double> end,
      Duration window) {
    Figures f = new Figures(start, end);
    String in = "in the last " + window.getSeconds() + " s";
    String who = "process " + pid + ", context '" + context + "'";
    List<Finding> out = new ArrayList<>();
    out.add(
        Finding.ok(
            "process",
            "scr is loaded in "
                + who
                + (settings.isEmpty() ? " (default settings)" : " (" + settings + ")")));

    // Field case 1: are the reads short-circuit at all, and if not, why.
    long reads = f.delta(ClientMetric.SHORT_CIRCUIT_READS);
    long bytes = f.delta(ClientMetric.SHORT_CIRCUIT_BYTES);
    long fallbacks = f.delta(ClientMetric.FALLBACK_TOTAL);
    String readLine =
        reads + " short-circuit reads (" + bytes + " bytes), " + fallbacks + " fallbacks " + in;
    if (fallbacks == 0) {
      out.add(Finding.ok("process-reads", who + ": " + readLine));
    } else {
      List<String> reasons = new ArrayList<>();
      List<String> fixes = new ArrayList<>();
      for (FallbackReason r : FallbackReason.values()) {
        long n = f.delta(ClientMetric.fallback(r).name());
        if (n > 0) {
          reasons.add(r + " " + n);
          fixes.add(r + ": " + fixFor(r));
        }
      }
      out.add(
          Finding.warn(
              "process-reads",
              who + ": " + readLine + " (" + String.join(", ", reasons) + ")",
              String.join("; ", fixes)));
    }

    // Field cases 4 (thrash) and 2 (fd bloat).
    long hits = f.delta(ClientMetric.CACHE_HITS);
    long misses = f.delta(ClientMetric.CACHE_MISSES);
    long capacity = f.gauge(ClientMetric.CACHE_CAPACITY);
    long recommended = f.gauge(ClientMetric.CACHE_RECOMMENDED_CAPACITY);
    long evictions = f.delta(ClientMetric.CACHE_EVICTIONS_SIZE);
    String cacheLine =
        String.format(
            "replica cache hit %s %s (%d hits, %d misses), %d evictions for size, capacity %d",
            hits + misses == 0 ? "n/a" : String.format("%.1f%%", 100.0 * hits / (hits + misses)),
            in,
            hits,
            misses,
            evictions,
            capacity);
    if (recommended > capacity) {
      out.add(
          Finding.warn(
              "process-cache",
              who + ": cache thrash: " + cacheLine + "; the working set needs ~" + recommended,
              "raise "
                  + ScrKeys.CACHE_CAPACITY.name()
                  + " to "
                  + recommended
                  + " and ulimit -n to at least "
                  + 2 * (2 * recommended + 1024)
                  + " (docs/operations.md case 4)"));
    } else {
      out.add(Finding.ok("process-cache", who + ": " + cacheLine));
    }
    long openFds = f.gauge(ClientMetric.PROCESS_OPEN_FDS);
    long fdLimit = f.gauge(ClientMetric.PROCESS_FD_LIMIT);
    long cacheFds = f.gauge(ClientMetric.CACHE_OPEN_FDS);
    long budget = f.gauge(ClientMetric.CACHE_FD_BUDGET);
    long budgetFallbacks = f.delta(ClientMetric.fallback(FallbackReason.FD_BUDGET).name());
    String fdLine =
        String.format(
            "fds %d of the process limit %d, the replica cache holds %d of its budget %d",
            openFds, fdLimit, cacheFds, budget);
    if (fdLimit > 0 && openFds > fdLimit * 8 / 10) {
      out.add(
          Finding.warn(
              "process-fds",
              who + ": " + fdLine + ": the process is near its fd limit",
              "raise the hard limit (ulimit -Hn, limits.conf nofile, systemd LimitNOFILE) of the"
                  + " process's user and restart it (docs/operations.md cases 2 and 3)"));
    } else if (budgetFallbacks > 0) {
      out.add(
          Finding.warn(
              "process-fds",
              who + ": " + fdLine + "; " + budgetFallbacks + " reads fell back at the budget " + in,
              "raise "
                  + ScrKeys.CACHE_FD_BUDGET.name()
                  + " or the process fd limit (docs/operations.md case 2)"));
    } else {
      out.add(Finding.ok("process-fds", who + ": " + fdLine));
    }

    // Field case 5: slow slot allocation and release.
    long timeouts = f.delta(ClientMetric.SLOT_ALLOCATION_TIMEOUTS);
    long waited = f.delta(ClientMetric.SLOT_ALLOCATIONS_WAITED);
    long pending = f.gauge(ClientMetric.SLOTS_PENDING_RELEASE);
    long waitP99 = f.gauge(ClientMetric.SLOT_ALLOCATION_WAIT_P99);
    String slotLine =
        String.format(
            "slot allocations waited %d, timed out %d %s (wait p99 %d us), %d pending release",
            waited, timeouts, in, waitP99, pending);
    if (timeouts > 0) {
      out.add(
          Finding.warn(
              "process-slots",
              who + ": " + slotLine,
              "raise "
                  + ScrKeys.SLOT_POOL_LOW_WATERMARK.name()
                  + " so segments are fetched earlier; check"
                  + " the DataNode's release latency (docs/operations.md case 5)"));
    } else {
      out.add(Finding.ok("process-slots", who + ": " + slotLine));
    }

    // Field cases 1, 6 and 7 per DataNode socket path.
    for (String path : f.paths()) {
      String p = "path[" + path + "].";
      long remaining = f.gauge(p + ClientMetric.PATH_BACKOFF_REMAINING.metricName());
      boolean backingOff = f.gauge(p + ClientMetric.PATH_BACKING_OFF.metricName()) > 0;
      List<String> failures = new ArrayList<>();
      for (FailureClass fc : FailureClass.values()) {
        long n = f.delta(p + ClientMetric.failures(fc).name());
        if (n > 0) {
          failures.add(fc + " " + n);
        }
      }
      String pathLine =
          String.format(
              "DataNode socket %s: %d reads, %d replica opens %s",
              path,
              f.delta(p + ClientMetric.PATH_READS.metricName()),
              f.delta(p + ClientMetric.PATH_OPENS.metricName()),
              in);
      long state = f.gauge(p + ClientMetric.PATH_HEALTH_STATE.metricName());
      long healthChanges = f.delta(p + ClientMetric.PATH_HEALTH_TRANSITIONS.metricName());
      long unresponsive = f.delta(p + ClientMetric.PATH_HEALTH_UNRESPONSIVE.metricName());
      long dead = f.delta(p + ClientMetric.PATH_HEALTH_DEAD.metricName());
      String healthLine =
          String.format(
              "health %s now (deadline %d ms), %d health changes %s (%d to unresponsive, %d to"
                  + " dead)",
              healthName(state),
              f.gauge(p + ClientMetric.PATH_HEALTH_DEADLINE.metricName()),
              healthChanges,
              in,
              unresponsive,
              dead);
      pathLine = pathLine + ", " + healthLine;
      if (state != 0 || unresponsive > 0 || dead > 0) {
        out.add(
            Finding.warn(
                "process-datanode-health",
                who + ": DataNode socket " + path + ": " + healthLine,
                "the DataNode did not answer within its deadline or is not running: a GC pause,"
                    + " SIGSTOP, a stuck disk or DataXceiver, or a restart (check its GC log and"
                    + " jstack); replicas not open yet are read from other DataNodes meanwhile"
                    + " (fallback DATANODE_TIMEOUT, DATANODE_UNHEALTHY) and come back within a"
                    + " probe interval of its next answer (docs/operations.md, a hung local"
                    + " DataNode)"));
      }
      // A dead path admits no open (its fallbacks are DATANODE_UNHEALTHY, not connect failures):
      // its finding is the connect failure the probes keep meeting there.
      boolean deadNow = state == HealthState.DEAD.code();
      if (backingOff || !failures.isEmpty() || deadNow) {
        out.add(
            Finding.warn(
                "process-datanode",
                who
                    + ": "
                    + pathLine
                    + (deadNow
                        ? ", connects fail (nobody listens at the socket, or this user cannot"
                            + " reach it)"
                        : "")
                    + (failures.isEmpty() ? "" : ", failures " + String.join(", ", failures))
                    + (backingOff ? ", backing off for " + remaining + " ms more" : ""),
                "CONNECT: is the DataNode running, and may this user traverse the socket's"
                    + " directory (o+x)? IO: a slow or failing DataNode (disk, GC); UNSUPPORTED:"
                    + " the DataNode does not pass fds (install the scr shim or libhadoop); reads"
                    + " go the stock way meanwhile and resume by themselves (docs/operations.md"
                    + " cases 1 and 7)"));
      } else {
        out.add(Finding.ok("process-datanode", who + ": " + pathLine));
      }
    }
    long connects = f.delta(ClientMetric.SOCKET_CONNECTS);
    long connectFailures = f.delta(ClientMetric.SOCKET_CONNECT_FAILURES);
    long opens = f.delta(ClientMetric.REPLICA_OPENS);
    if (connectFailures > 0 || (opens >= 20 && connects * 2 > opens)) {
      out.add(
          Finding.warn(
              "process-connections",
              String.format(
                  "%s: %d socket connects (%d failed) for %d replica opens %s: connections are"
                      + " not being reused",
                  who, connects, connectFailures, opens, in),
              "keep "
                  + ScrKeys.NET_POOL_IDLE_EXPIRY_MS.name()
                  + " below the DataNode's"
                  + " dfs.datanode.socket.reuse.keepalive and "
                  + ScrKeys.NET_POOL_MAX_IDLE.name()
                  + " above"
                  + " 0; with the scr shim raise scr.shim.socket.backlog (docs/operations.md case"
                  + " 6)"));
    }
    return out;
  }

  private static String healthName(long code) {
    for (HealthState s : HealthState.values()) {
      if (s.code() == code) {
        return s.name().toLowerCase(java.util.Locale.ROOT);
      }
    }
    return "unknown";
  }

  private static String fixFor(FallbackReason r) {
    switch (r) {
      case DATANODE_TIMEOUT:
      case DATANODE_UNHEALTHY:
        return "the local DataNode did not answer in time or is not running: see the"
            + " process-datanode-health finding (and process-datanode for a socket no connect"
            + " reaches)";
      case NOT_CONFIGURED:
        return "no socket path matches a DataNode: run scr doctor as this process's user with its"
            + " configuration (socket-path, masked-keys)";
      case NOT_LOCAL:
        return "the DataNode's address is not one of this host's interfaces (containers, NAT):"
            + " run the client in the host network (the replica accessor also takes a socket"
            + " listed in "
            + ScrKeys.CLIENT_SOCKET_PATHS.name()
            + "; ScrFileSystem needs a local address)";
      case BACKING_OFF:
      case CONNECT_FAILED:
      case IO_ERROR:
        return "see the process-datanode finding for the path and its failures";
      case UNSUPPORTED:
        return "the DataNode does not pass fds: install the scr shim (or libhadoop on a stock"
            + " DataNode)";
      case FD_BUDGET:
        return "raise " + ScrKeys.CACHE_FD_BUDGET.name() + " or the process fd limit";
      case BLOCK_REFUSED:
        return "the local DataNode does not hold these blocks (remote or moved replicas): normal"
            + " after region moves, reads go over TCP until the data is local again";
      case DISABLED:
        return "scr.enabled is false in this process's configuration";
      case CLOSED:
        return "reads raced the file system's close: normal at shutdown";
      default:
        return "see docs/operations.md";
    }
  }

  /** Two samples of one context's metrics. */
  private static final class Figures {
    private final Map<String, Double> start;
    private final Map<String, Double> end;

    Figures(Map<String, Double> start, Map<String, Double> end) {
      this.start = start;
      this.end = end;
    }

    long delta(ClientMetric m) {
      return delta(m.metricName());
    }

    long delta(String name) {
      return Math.max(0, Math.round(end.getOrDefault(name, 0.0) - start.getOrDefault(name, 0.0)));
    }

    long gauge(ClientMetric m) {
      return gauge(m.metricName());
    }

    long gauge(String name) {
      return Math.round(end.getOrDefault(name, 0.0));
    }

    List<String> paths() {
      Set<String> out = new TreeSet<>();
      for (String k : end.keySet()) {
        if (k.startsWith("path[")) {
          int close = k.indexOf("].");
          if (close > 0) {
            out.add(k.substring("path[".length(), close));
          }
        }
      }
      return new ArrayList<>(out);
    }
  }

  /** The real sleeper. */
  static void sleep(Duration d) throws InterruptedException {
    TimeUnit.MILLISECONDS.sleep(d.toMillis());
  }
}
