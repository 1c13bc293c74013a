package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.util.ServicePlugin;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One local process floods the shim's socket with connections, each asking for shared-memory
 * segments and never reading (run in a child JVM, {@link ConnectionFloodMain}, so its fds are its
 * own). The fds passed to it stay in flight, charged to the DataNode's user, until it reads them or
 * exits; a user with more in flight than its open-file limit cannot pass any fd, to any client. The
 * shim keeps such a connection open and counted until its peer reads or closes, so one process pins
 * at most {@code scr.shim.client.max.connections} of them; a well-behaved client keeps reading
 * short-circuit during and after the flood; and everything the flood held is freed when it exits.
 */
class ShimConnectionFloodTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK + 4321;

  /** Connections one process may hold; the flood is much larger. */
  private static final int QUOTA = 100;

  /** The figure the flood was first measured with, when this JVM's open-file limit allows it. */
  private static final int FLOOD = 1500;

  /** Segment requests sent on each flood connection, none of whose replies is read. */
  private static final int REQUESTS_PER_CONNECTION = 8;

  static {
    JvmSingletons.warm();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.setInt(ScrShimKeys.CLIENT_MAX_CONNECTIONS.name(), QUOTA))
          .buildExtension();

  @Test
  void aFloodingProcessPinsAtMostItsQuotaOfFdsAndOthersKeepReadingShortCircuit() throws Exception {
    ScrShimPlugin plugin = plugin();
    assertTrue(plugin.awaitServing(30_000), "shim not serving: " + plugin.failure());
    byte[] data = DFS.dfs().writeRandomFile("/flood/data", LEN, 7);
    assertReadsShortCircuit("flood-before", data);
    await(
        "the reader's connections are closed",
        () -> plugin.counters().get("live.connections") == 0);
    long connectionsBefore = plugin.counters().get("live.connections");
    long segmentsBefore = plugin.counters().get("live.segments");

    int flood = floodSize();
    assertTrue(flood > 2 * QUOTA, "this JVM's open-file limit leaves room for a flood: " + flood);
    Process child = startFlood(flood);
    try (BufferedReader out =
            new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        OutputStream in = child.getOutputStream()) {
      Map<String, String> connected = readUntil(out, "HOLDING");
      assertEquals(
          Integer.toString(flood),
          connected.get("CONNECTED"),
          "every connect of the flood succeeds (refusals come as answers): " + connected);

      // During the flood (every connection open, none read): others are served.
      assertReadsShortCircuit("flood-during", data);

      in.write("DRAIN\n".getBytes(StandardCharsets.UTF_8));
      in.flush();
      Map<String, String> drained = readUntil(out, "DRAINED");
      System.out.println(
          "Flood of " + flood + " connections: " + connected + "; drained: " + drained);
      int unreadFds = Integer.parseInt(drained.get("UNREAD_FDS"));
      assertTrue(
          unreadFds > 0 && unreadFds <= QUOTA,
          "fds left in flight in the flooding process's unread connections: "
              + unreadFds
              + " (at most its connection quota, "
              + QUOTA
              + "); "
              + drained);
      String refusal = drained.get("ERROR");
      assertNotNull(refusal, "connections over the quota are answered: " + drained);
      assertTrue(
          refusal.contains(ScrShimKeys.CLIENT_MAX_CONNECTIONS.name()),
          "the refusal names the key: " + refusal);
      assertReadsShortCircuit("flood-drained", data);
    } finally {
      child.destroy(); // its stdin is closed: it closes its connections and exits
      if (!child.waitFor(30, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }

    await(
        "the flood's connections and segments are freed once the process is gone",
        () ->
            plugin.counters().get("live.connections") <= connectionsBefore
                && plugin.counters().get("live.segments") <= segmentsBefore);
    assertReadsShortCircuit("flood-after", data);
  }

  /** As many connections as the flood measured, or as this user's open-file limit allows. */
  private static int floodSize() throws IOException {
    long limit = Long.MAX_VALUE;
    for (String line : Files.readAllLines(Paths.get("/proc/self/limits"))) {
      if (line.startsWith("Max open files")) {
        String soft = line.substring("Max open files".length()).trim().split("\\s+")[0];
        limit = soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
      }
    }
    // The child JVM raises its soft limit to the hard one, as this JVM did; it needs ~200 fds of
    // its own (jars, epoll, the JIT), and this JVM's DataNode at most one per flood connection.
    return (int) Math.min(FLOOD, limit - 300);
  }

  private static Process startFlood(int connections) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
    cmd.add("-Xmx64m");
    cmd.add(ConnectionFloodMain.class.getName());
    cmd.add(DFS.dfs().socketPath(0));
    cmd.add(Integer.toString(connections));
    cmd.add(Integer.toString(REQUESTS_PER_CONNECTION));
    cmd.add("5000");
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  /** The child's {@code KEY value} lines up to {@code last}. */
  private static Map<String, String> readUntil(BufferedReader out, String last) throws IOException {
    Map<String, String> lines = new HashMap<>();
    StringBuilder all = new StringBuilder();
    String line;
    while ((line = out.readLine()) != null) {
      all.append(line).append('\n');
      if (line.equals(last)) {
        return lines;
      }
      int space = line.indexOf(' ');
      if (space > 0) {
        lines.putIfAbsent(line.substring(0, space), line.substring(space + 1));
      }
    }
    throw new AssertionError("the flooding process ended before " + last + ":\n" + all);
  }

  /** A new client context (its own connections and segments) reads the file, all short-circuit. */
  private static void assertReadsShortCircuit(String context, byte[] data) throws IOException {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
                  c.setBoolean("fs.hdfs.impl.disable.cache", true);
                  c.setBoolean("dfs.client.read.shortcircuit", false); // mode B: no libhadoop
                  c.set("scr.client.context", context);
                  c.setInt("scr.metrics.summary.interval.seconds", 0);
                });
    try (FSDataInputStream in = fs.open(new Path("/flood/data"))) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all, context);
      HdfsDataInputStream hin = (HdfsDataInputStream) in;
      assertEquals(
          data.length,
          hin.getReadStatistics().getTotalShortCircuitBytesRead(),
          context + ": every byte short-circuit");
    } finally {
      fs.close(); // and its engine: its connections and segments
    }
  }

  private static ScrShimPlugin plugin() throws ReflectiveOperationException {
    DataNode dn = DFS.dfs().cluster().getDataNodes().get(0);
    Field f = DataNode.class.getDeclaredField("plugins");
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    List<ServicePlugin> plugins = (List<ServicePlugin>) f.get(dn);
    for (ServicePlugin p : plugins) {
      if (p instanceof ScrShimPlugin shim) {
        return shim;
      }
    }
    throw new AssertionError("no ScrShimPlugin in " + plugins);
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() - deadline < 0, "timed out waiting until " + what);
      Thread.sleep(20);
    }
  }
}
