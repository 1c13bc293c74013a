package io.scr.deploy;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * One child JVM of the deployment: a NameNode, a DataNode or a client, started by {@link
 * DeployedHdfs}. Its stderr (and, for servers, stdout) goes to a log file; a client's stdout is a
 * line protocol read here ({@link DeployClient}). Every child started in this JVM is registered in
 * {@link #LIVE} until it exits, and a shutdown hook kills what is left, so a failed or killed test
 * run leaves no process of the deployment's users behind (the children also get SIGKILL from the
 * kernel when this JVM dies: {@code setpriv --pdeathsig KILL}).
 *
 * <p>Start children from the test's own (main) thread: the kernel's parent-death signal follows the
 * thread that forked, so a child started from a short-lived thread would die with it.
 *
 * <p>Not thread-safe, except {@link #killAll()}.
 */
final class Child {
  private static final Set<Child> LIVE = ConcurrentHashMap.newKeySet();
  private static final Pattern WHITESPACE = Pattern.compile("\\s+");

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(Child::killAll, "scr-it-deploy-kill-children"));
  }

  final String name;
  final Process process;
  final Path log;
  private final BlockingQueue<String> stdout = new LinkedBlockingQueue<>();
  private final List<String> stdoutSeen = new ArrayList<>();
  private Writer stdin;

  private Child(String name, Process process, Path log, boolean readStdout) {
    this.name = name;
    this.process = process;
    this.log = log;
    if (readStdout) {
      Thread reader =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                  for (String line = r.readLine(); line != null; line = r.readLine()) {
                    stdout.add(line);
                  }
                } catch (IOException e) {
                  stdout.add("<stdout read failed: " + e + ">");
                }
              },
              "scr-it-deploy-stdout-" + name);
      reader.setDaemon(true);
      reader.start();
      stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    }
  }

  /** Starts {@code builder} and registers the process for clean-up. */
  static Child start(String name, ProcessBuilder builder, Path log, boolean readStdout)
      throws IOException {
    Process p = builder.start();
    Child c = new Child(name, p, log, readStdout);
    LIVE.add(c);
    var unused = p.onExit().thenRun(() -> LIVE.remove(c));
    return c;
  }

  long pid() {
    return process.pid();
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /**
   * The next stdout line starting with {@code prefix} (earlier lines are kept for {@link
   * #describe()}), with the prefix removed.
   *
   * @throws AssertionError when the child exits or {@code timeout} passes first, with its log
   */
  String awaitLine(String prefix, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      String line = stdout.poll(100, TimeUnit.MILLISECONDS);
      if (line != null) {
        stdoutSeen.add(line);
        if (line.startsWith(prefix)) {
          return line.substring(prefix.length());
        }
        continue;
      }
      if (!process.isAlive() && stdout.isEmpty()) {
        throw new AssertionError(
            name + " exited (" + process.exitValue() + ") before printing " + prefix + describe());
      }
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError(
            name + " printed no " + prefix + " within " + timeout + describe());
      }
    }
  }

  /** Sends one line to the child's stdin. */
  void send(String line) {
    try {
      stdin.write(line + "\n");
      stdin.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(name + " no longer reads its stdin" + describe(), e);
    }
  }

  /** Waits for the child to exit on its own. */
  int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      kill();
      throw new AssertionError(name + " did not exit within " + timeout + describe());
    }
    return process.exitValue();
  }

  /** SIGKILL (kill -9) and wait for the process to be gone. */
  void kill() {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Kills every child this JVM started that is still running. */
  static void killAll() {
    for (Child c : LIVE) {
      c.kill();
    }
  }

  /** The {@code Uid:} line of {@code /proc/<pid>/status}: real, effective, saved, fs uid. */
  int[] uids() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/" + pid() + "/status"))) {
      if (line.startsWith("Uid:")) {
        String[] f = WHITESPACE.split(line.substring(4).trim(), -1);
        int[] out = new int[f.length];
        for (int i = 0; i < f.length; i++) {
          out[i] = Integer.parseInt(f[i]);
        }
        return out;
      }
    }
    throw new IOException("no Uid line in /proc/" + pid() + "/status");
  }

  /** The shared objects mapped into the child whose file name contains {@code fragment}. */
  List<String> mappedLibraries(String fragment) throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of("/proc/" + pid() + "/maps"))) {
      int slash = line.indexOf('/');
      if (slash >= 0 && line.contains(fragment)) {
        String file = line.substring(slash);
        if (!out.contains(file)) {
          out.add(file);
        }
      }
    }
    return out;
  }

  /** The log file's lines that contain {@code fragment}. */
  List<String> logLines(String fragment) throws IOException {
    List<String> out = new ArrayList<>();
    if (!Files.exists(log)) {
      return out;
    }
    for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
      if (line.contains(fragment)) {
        out.add(line);
      }
    }
    return out;
  }

  /** The child's stdout so far and the tail of its log, for failure messages. */
  String describe() {
    StringBuilder sb = new StringBuilder();
    if (!stdoutSeen.isEmpty()) {
      sb.append("\n--- ").append(name).append(" stdout ---\n");
      stdoutSeen.forEach(l -> sb.append(l).append('\n'));
    }
    sb.append("\n--- last lines of ").append(log).append(" ---\n");
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      for (String l : lines.subList(Math.max(0, lines.size() - 60), lines.size())) {
        sb.append(l).append('\n');
      }
    } catch (IOException e) {
      sb.append("<cannot read: ").append(e).append(">\n");
    }
    return sb.toString();
  }

  /** Parses a {@code key=value key=value} line (values without spaces). */
  static Map<String, String> parseProperties(String line) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String kv : WHITESPACE.split(line.trim(), -1)) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        out.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return name + " (pid " + pid() + ")";
  }
}
