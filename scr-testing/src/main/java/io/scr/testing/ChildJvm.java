package io.scr.testing;

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
import java.util.stream.Stream;

/**
 * One child JVM of a test: a NameNode, a DataNode or a client process, started by a {@link
 * Launcher}. Its stderr (and, unless it speaks a line protocol, its stdout) goes to a log file; a
 * protocol child's stdout is read here line by line ({@link #awaitLine}) and its stdin written
 * ({@link #send}). Every child started in this JVM is registered until it exits, and a shutdown
 * hook kills what is left; children started through {@code setpriv --pdeathsig KILL} (when it is on
 * the {@code PATH}) also get SIGKILL from the kernel when the thread that started them dies, even
 * if this JVM is killed, so a failed or killed test run leaves no process behind.
 *
 * <p>Start children from the test's own (main) thread: the kernel's parent-death signal follows the
 * thread that forked, so a child started from a short-lived thread would die with it.
 *
 * <p>Not thread-safe, except {@link #killAll()}, {@link #isAlive()} and {@link #pid()}.
 */
public final class ChildJvm {
  private static final Set<ChildJvm> LIVE = ConcurrentHashMap.newKeySet();
  private static final Pattern WHITESPACE = Pattern.compile("\\s+");

  static {
    Runtime.getRuntime()
        .addShutdownHook(new Thread(ChildJvm::killAll, "scr-testing-kill-children"));
  }

  /**
   * Small, fast-starting JVMs: two cores run a NameNode, several DataNodes, a client and the test
   * at once.
   */
  public static final List<String> SMALL_JVM_FLAGS =
      List.of(
          "-Xmx256m",
          "-XX:TieredStopAtLevel=1",
          "-Xshare:auto",
          "-XX:+UseSerialGC",
          "-XX:-UsePerfData",
          "-Djava.net.preferIPv4Stack=true");

  /** Names the child in logs and messages. */
  public final String name;

  /** The JVM's process (for signals the methods here do not send). */
  public final Process process;

  /** Where its output goes. */
  public final Path log;

  private final BlockingQueue<String> stdout = new LinkedBlockingQueue<>();
  private final List<String> stdoutSeen = new ArrayList<>();
  private Writer stdin;

  private ChildJvm(String name, Process process, Path log, boolean readStdout) {
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
              "child-stdout-" + name);
      reader.setDaemon(true);
      reader.start();
      stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    }
  }

  /** Starts describing the launch of {@code mainClass} in a child JVM named {@code name}. */
  public static Launcher launcher(String name, String mainClass) {
    return new Launcher(name, mainClass);
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /**
   * The next stdout line starting with {@code prefix} (earlier lines are kept for {@link
   * #describe()}), with the prefix removed.
   *
   * @throws AssertionError when the child exits or {@code timeout} passes first, with its log
   */
  public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
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
  public void send(String line) {
    try {
      stdin.write(line + "\n");
      stdin.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(name + " no longer reads its stdin" + describe(), e);
    }
  }

  /** A condition {@link #awaitTrue} polls. */
  @FunctionalInterface
  public interface Condition {
    boolean holds() throws IOException;
  }

  /**
   * Polls {@code condition} every 100 ms until it holds: for start-up progress that shows only in
   * logs and RPC answers.
   *
   * @throws AssertionError when the child exits or {@code timeout} passes first, with its log tail
   */
  public void awaitTrue(String what, Duration timeout, Condition condition)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.holds()) {
      if (!process.isAlive()) {
        throw new AssertionError(
            name + " exited (" + process.exitValue() + ") while waiting for " + what + describe());
      }
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError(
            "timed out after " + timeout + " waiting for " + what + describe());
      }
      Thread.sleep(100); // nothing to wait on: the child says it only in its log or over RPC
    }
  }

  /**
   * Whether a line of the log contains {@code fragment}; false while the log does not exist yet.
   * Read as ISO-8859-1, so a line half written (a multi-byte character cut) cannot fail the read.
   */
  public boolean logContains(String fragment) {
    try {
      if (!Files.exists(log)) {
        return false;
      }
      try (Stream<String> lines = Files.lines(log, StandardCharsets.ISO_8859_1)) {
        return lines.anyMatch(l -> l.contains(fragment));
      }
    } catch (IOException | UncheckedIOException e) {
      return false; // rotated or deleted under us: look again
    }
  }

  /**
   * SIGTERM (an orderly shutdown, as a rolling restart does), then SIGKILL if the child is still
   * running after {@code grace}; waits until it is gone.
   *
   * @return whether it exited on its own within {@code grace}
   */
  public boolean terminate(Duration grace) throws InterruptedException {
    process.destroy();
    if (process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
      return true;
    }
    kill();
    return false;
  }

  /** Waits for the child to exit on its own. */
  public int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      kill();
      throw new AssertionError(name + " did not exit within " + timeout + describe());
    }
    return process.exitValue();
  }

  /** SIGKILL (kill -9) and wait for the process to be gone. */
  public void kill() {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Kills every child this JVM started that is still running. */
  public static void killAll() {
    for (ChildJvm c : LIVE) {
      c.kill();
    }
  }

  /** The {@code Uid:} line of {@code /proc/<pid>/status}: real, effective, saved, fs uid. */
  public int[] uids() throws IOException {
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
  public List<String> mappedLibraries(String fragment) throws IOException {
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
  public List<String> logLines(String fragment) throws IOException {
    List<String> out = new ArrayList<>();
    if (!Files.exists(log)) {
      return out;
    }
    for (String line : Files.readAllLines(log, StandardCharsets.ISO_8859_1)) {
      if (line.contains(fragment)) {
        out.add(line);
      }
    }
    return out;
  }

  /** The child's stdout so far and the tail of its log, for failure messages. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    if (!stdoutSeen.isEmpty()) {
      sb.append("\n--- ").append(name).append(" stdout ---\n");
      stdoutSeen.forEach(l -> sb.append(l).append('\n'));
    }
    sb.append("\n--- last lines of ").append(log).append(" ---\n");
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.ISO_8859_1);
      for (String l : lines.subList(Math.max(0, lines.size() - 60), lines.size())) {
        sb.append(l).append('\n');
      }
    } catch (IOException e) {
      sb.append("<cannot read: ").append(e).append(">\n");
    }
    return sb.toString();
  }

  /** Parses a {@code key=value key=value} line (values without spaces). */
  public static Map<String, String> parseProperties(String line) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String kv : WHITESPACE.split(line.trim(), -1)) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        out.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    return out;
  }

  /** Whether {@code command} is an executable file in a directory of the {@code PATH}. */
  public static boolean onPath(String command) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (Files.isExecutable(Path.of(dir, command))) {
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return name + " (pid " + pid() + ")";
  }

  /**
   * How to start one child JVM: the java binary (default: this JVM's), its flags ({@link
   * #SMALL_JVM_FLAGS} always follow them), system properties, {@code java.io.tmpdir}, {@code
   * java.library.path}, class path, main class and arguments, the working directory and the log.
   * The child's environment is this JVM's without {@code HADOOP_*}, {@code HDFS_*}, {@code
   * HBASE_*}, {@code CLASSPATH} and {@code JAVA_TOOL_OPTIONS}, so only the class path given here
   * configures it.
   */
  public static final class Launcher {
    private final String name;
    private final String mainClass;
    private Path javaBin = Path.of(System.getProperty("java.home"), "bin", "java");
    private final List<String> jvmFlags = new ArrayList<>();
    private final List<String> properties = new ArrayList<>();
    private final List<String> args = new ArrayList<>();
    private final Map<String, String> environment = new LinkedHashMap<>();
    private String classpath = "";
    private Path tmpDir;
    private Path libraryPath;
    private Path workingDir;
    private Path log;
    private boolean setpriv;
    private int[] uidGid;
    private boolean lineProtocol;
    private boolean smallJvm = true;

    private Launcher(String name, String mainClass) {
      this.name = name;
      this.mainClass = mainClass;
    }

    /** The java binary (default: {@code java.home}'s). */
    public Launcher javaBin(Path java) {
      this.javaBin = java;
      return this;
    }

    /**
     * Whether {@link #SMALL_JVM_FLAGS} follow the caller's flags (default: yes); off for a child
     * whose heap, compiler and collector are part of what a benchmark measures.
     */
    public Launcher smallJvm(boolean on) {
      this.smallJvm = on;
      return this;
    }

    /** JVM flags before {@link #SMALL_JVM_FLAGS} (e.g. the {@code --add-opens} Hadoop needs). */
    public Launcher jvmFlags(List<String> flags) {
      jvmFlags.addAll(flags);
      return this;
    }

    /** A {@code -Dkey=value} system property. */
    public Launcher property(String key, String value) {
      properties.add("-D" + key + "=" + value);
      return this;
    }

    /** Program arguments after the main class. */
    public Launcher args(List<String> a) {
      args.addAll(a);
      return this;
    }

    /** The class path, joined with {@code :}. */
    public Launcher classpath(List<Path> entries) {
      this.classpath =
          entries.stream().map(Path::toString).reduce((a, b) -> a + ":" + b).orElse("");
      return this;
    }

    /** The class path as one string. */
    public Launcher classpath(String cp) {
      this.classpath = cp;
      return this;
    }

    /** The child's {@code java.io.tmpdir} (must exist). */
    public Launcher tmpDir(Path dir) {
      this.tmpDir = dir;
      return this;
    }

    /** The child's {@code java.library.path}. */
    public Launcher libraryPath(Path dir) {
      this.libraryPath = dir;
      return this;
    }

    /** The working directory (default: {@link #tmpDir}). */
    public Launcher workingDir(Path dir) {
      this.workingDir = dir;
      return this;
    }

    /** An environment variable of the child. */
    public Launcher environment(String key, String value) {
      environment.put(key, value);
      return this;
    }

    /** Where stderr goes (and stdout, unless {@link #lineProtocol}); parents are created. */
    public Launcher log(Path file) {
      this.log = file;
      return this;
    }

    /**
     * Starts the child through {@code setpriv --pdeathsig KILL} (when {@code on}; the caller checks
     * {@link ChildJvm#onPath}): the kernel kills it when the starting thread dies.
     */
    public Launcher setpriv(boolean on) {
      this.setpriv = on;
      return this;
    }

    /** With {@link #setpriv}: the child runs as {@code uid}/{@code gid} with no extra groups. */
    public Launcher runAs(int uid, int gid) {
      this.uidGid = new int[] {uid, gid};
      return this;
    }

    /**
     * The child speaks a line protocol: its stdout is read by {@link ChildJvm#awaitLine}, its stdin
     * written by {@link ChildJvm#send}; else stdin is {@code /dev/null}.
     */
    public Launcher lineProtocol(boolean on) {
      this.lineProtocol = on;
      return this;
    }

    /** Starts the child and registers it for clean-up. */
    public ChildJvm start() throws IOException {
      if (tmpDir == null || libraryPath == null || log == null) {
        throw new IllegalStateException(name + ": tmpDir, libraryPath and log are required");
      }
      List<String> cmd = new ArrayList<>();
      if (setpriv) {
        cmd.add("setpriv");
        if (uidGid != null) {
          cmd.addAll(List.of("--reuid=" + uidGid[0], "--regid=" + uidGid[1], "--clear-groups"));
        }
        // The kernel kills the child when the launching thread dies, even by SIGKILL.
        cmd.addAll(List.of("--pdeathsig", "KILL", "--"));
      }
      cmd.add(javaBin.toString());
      cmd.addAll(jvmFlags);
      if (smallJvm) {
        cmd.addAll(SMALL_JVM_FLAGS);
      }
      cmd.addAll(properties);
      cmd.add("-Djava.io.tmpdir=" + tmpDir);
      cmd.add("-Djava.library.path=" + libraryPath);
      cmd.add("-cp");
      cmd.add(classpath);
      cmd.add(mainClass);
      cmd.addAll(args);
      ProcessBuilder pb =
          new ProcessBuilder(cmd).directory((workingDir != null ? workingDir : tmpDir).toFile());
      pb.environment()
          .keySet()
          .removeIf(
              k -> k.startsWith("HADOOP_") || k.startsWith("HDFS_") || k.startsWith("HBASE_"));
      pb.environment().remove("CLASSPATH");
      pb.environment().remove("JAVA_TOOL_OPTIONS");
      pb.environment().putAll(environment);
      Files.createDirectories(log.getParent());
      if (lineProtocol) {
        pb.redirectError(log.toFile());
      } else {
        pb.redirectErrorStream(true).redirectOutput(log.toFile());
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      }
      Process p = pb.start();
      ChildJvm c = new ChildJvm(name, p, log, lineProtocol);
      LIVE.add(c);
      var unused = p.onExit().thenRun(() -> LIVE.remove(c));
      return c;
    }
  }
}
