package io.scr.benchmarks.read;

import com.sun.jdi.AbsentInformationException;
import com.sun.jdi.Bootstrap;
import com.sun.jdi.IncompatibleThreadStateException;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.MethodEntryEvent;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.EventRequest;
import com.sun.jdi.request.EventRequestManager;
import com.sun.jdi.request.MethodEntryRequest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Which scr classes one warm cache-hit pread runs through: a JDI tracer around one positional 4 KiB
 * read through {@code ScrFileSystem} (mode A, checksums verified, the replica cached and the
 * reading thread's spare lease and buffers made by earlier reads), as the benchmarks read.
 *
 * <p>It starts the reading JVM itself (this class with {@code --target}, the same class path and
 * JVM options, plus a JDWP agent): that JVM starts a one-DataNode MiniDFS cluster, writes a file of
 * four 4 MiB blocks, reads all of it and then {@value #WARM_READS} random 4 KiB preads, and waits.
 * The tracer attaches and, on the reading thread only, between the entry of {@code measured} and
 * that of {@code afterMeasured} (one pread), records every method entry in {@code io.scr.*} (but
 * {@code io.scr.benchmarks.*}, the harness) and in {@code org.apache.hadoop.hdfs
 * .ScrDfsInputStreamBase}, by the class that declares the method, and the stack at each {@code
 * FileChannelImpl.read(ByteBuffer, long)}. Method entries, not frames: a class counts once one of
 * its methods runs, whether or not it is on the stack when the bytes are read. Field reads of
 * another class's object do not count. Lambdas and other hidden classes of scr are listed apart.
 *
 * <p>Run from the repository root (writes {@code benchmarks/target/hit-path-trace.txt}, prints the
 * same):
 *
 * <pre>
 * mvn -B -o -q -DskipTests -Dspotless.check.skip=true -pl benchmarks -am package &amp;&amp; \
 *   java -Djava.library.path=benchmarks/target/native --add-opens java.base/java.lang=ALL-UNNAMED \
 *   -cp "benchmarks/target/test-classes:$(ls benchmarks/target/benchmarks-*.jar | grep -v sources \
 *   | head -1):$(cat benchmarks/target/classpath.txt)" io.scr.benchmarks.read.HitPathTrace
 * </pre>
 *
 * <p>The method entries are traced in the interpreter (the JVM deoptimizes a thread that reports
 * them), which changes the timing, not the path a read takes. The traced read follows an untraced
 * read of the same replica: a release that is the replica's first in a tick of the replica cache's
 * clock also records the entry in its stripe's buffer ({@code Stripe.recordIdle}, once per entry
 * and tick, for the LRU order), so the read right after the tracer attached would show that class
 * too.
 */
public final class HitPathTrace {
  private static final String TARGET_FLAG = "--target";
  private static final String READY = "HIT-PATH-TRACE READY";
  private static final int WARM_READS = 20_000;
  private static final int BLOCK_SIZE = 4 << 20;

  /** Block 1, not on a checksum chunk boundary, not crossing a block: one block's hit. */
  static final long POSITION = BLOCK_SIZE + 123_457;

  private static final String BASE_CLASS = "org.apache.hadoop.hdfs.ScrDfsInputStreamBase";
  private static final String CHANNEL_CLASS = "sun.nio.ch.FileChannelImpl";

  private HitPathTrace() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals(TARGET_FLAG)) {
      target();
    } else {
      trace(args.length > 0 ? Paths.get(args[0]) : Paths.get("benchmarks/target"));
    }
  }

  // ------------------------------------------------------------------ the reading JVM

  private static void target() throws Exception {
    try (BenchFile file =
        BenchFile.create(
            ReadPathType.SCR_FILESYSTEM, "/trace/hit", BLOCK_SIZE, 4, c -> {}, c -> {})) {
      ReadPathType.Buffer buf = new ReadPathType.Buffer(4096);
      long[] offsets = file.randomOffsets(4096, 13, WARM_READS);
      for (long pos : offsets) {
        file.reader.readFully(pos, buf);
      }
      for (int i = 0; i < 100; i++) {
        file.reader.readFully(POSITION, buf);
      }
      file.check(POSITION, buf);
      System.out.println(READY);
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      in.readLine(); // the tracer has attached
      // The read before, untraced, right away: the traced one is then, like most hits, not the
      // replica's first release in a tick of the cache's clock (see the class comment).
      file.reader.readFully(POSITION, buf);
      measured(file, buf);
      afterMeasured();
      file.check(POSITION, buf);
      in.readLine(); // the tracer is done
    }
  }

  /** The traced read. */
  private static void measured(BenchFile file, ReadPathType.Buffer buf) throws IOException {
    file.reader.readFully(POSITION, buf);
  }

  /** Where the trace ends. */
  private static void afterMeasured() {}

  // ------------------------------------------------------------------ the tracer

  private static void trace(Path outDir) throws Exception {
    Files.createDirectories(outDir);
    Path targetLog = outDir.resolve("hit-path-trace-target.log");
    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!arg.startsWith("-agentlib:jdwp") && !arg.startsWith("-Xrunjdwp")) {
        command.add(arg);
      }
    }
    command.add("-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(HitPathTrace.class.getName());
    command.add(TARGET_FLAG);
    Process target =
        new ProcessBuilder(command)
            .redirectError(ProcessBuilder.Redirect.to(targetLog.toFile()))
            .start();
    try {
      BufferedReader out =
          new BufferedReader(
              new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
      String port = null;
      String line;
      while ((line = out.readLine()) != null && !line.equals(READY)) {
        String prefix = "Listening for transport dt_socket at address: ";
        if (line.startsWith(prefix)) {
          port = line.substring(prefix.length()).trim();
        }
      }
      if (line == null || port == null) {
        throw new IllegalStateException("the reading JVM did not get ready; see " + targetLog);
      }
      VirtualMachine vm = attach(port);
      Trace t;
      try (Writer go = new OutputStreamWriter(target.getOutputStream(), StandardCharsets.UTF_8)) {
        t = traceOneRead(vm, go);
        go.write("done\n");
      }
      String report = t.report();
      Files.writeString(outDir.resolve("hit-path-trace.txt"), report);
      System.out.print(report);
    } finally {
      if (!target.waitFor(60, TimeUnit.SECONDS)) {
        target.destroy();
      }
    }
  }

  private static VirtualMachine attach(String port) throws Exception {
    for (AttachingConnector c : Bootstrap.virtualMachineManager().attachingConnectors()) {
      if (c.name().equals("com.sun.jdi.SocketAttach")) {
        Map<String, Connector.Argument> args = c.defaultArguments();
        args.get("hostname").setValue("127.0.0.1");
        args.get("port").setValue(port);
        return c.attach(args);
      }
    }
    throw new IllegalStateException("no JDI socket attaching connector in this JDK");
  }

  private static Trace traceOneRead(VirtualMachine vm, Writer go) throws Exception {
    ReferenceType harness = vm.classesByName(HitPathTrace.class.getName()).get(0);
    ThreadReference main = null;
    for (ThreadReference t : vm.allThreads()) {
      if (t.name().equals("main")) {
        main = t;
      }
    }
    if (main == null) {
      throw new IllegalStateException("no main thread in the reading JVM");
    }
    EventRequestManager erm = vm.eventRequestManager();
    BreakpointRequest start = erm.createBreakpointRequest(method(harness, "measured").location());
    start.addThreadFilter(main);
    start.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
    start.enable();
    BreakpointRequest end =
        erm.createBreakpointRequest(method(harness, "afterMeasured").location());
    end.addThreadFilter(main);
    end.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
    end.enable();
    List<EventRequest> window = new ArrayList<>();
    MethodEntryRequest scr = erm.createMethodEntryRequest();
    scr.addThreadFilter(main);
    scr.addClassFilter("io.scr.*");
    scr.addClassExclusionFilter("io.scr.benchmarks.*");
    scr.setSuspendPolicy(EventRequest.SUSPEND_NONE);
    window.add(scr);
    MethodEntryRequest base = erm.createMethodEntryRequest();
    base.addThreadFilter(main);
    base.addClassFilter(BASE_CLASS);
    base.setSuspendPolicy(EventRequest.SUSPEND_NONE);
    window.add(base);
    ReferenceType channel = vm.classesByName(CHANNEL_CLASS).get(0);
    for (Method m : channel.methodsByName("read", "(Ljava/nio/ByteBuffer;J)I")) {
      BreakpointRequest read = erm.createBreakpointRequest(m.location());
      read.addThreadFilter(main);
      read.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
      window.add(read);
    }
    go.write("go\n");
    go.flush();

    Trace trace = new Trace();
    boolean inWindow = false;
    while (true) {
      EventSet events = vm.eventQueue().remove(120_000);
      if (events == null) {
        throw new IllegalStateException("no event from the reading JVM in 120 s");
      }
      boolean finished = false;
      for (Event e : events) {
        if (e instanceof VMDeathEvent || e instanceof VMDisconnectEvent) {
          throw new IllegalStateException("the reading JVM went away before the read ended");
        }
        if (e instanceof BreakpointEvent) {
          BreakpointEvent b = (BreakpointEvent) e;
          if (b.request() == start) {
            window.forEach(EventRequest::enable);
            inWindow = true;
          } else if (b.request() == end) {
            window.forEach(EventRequest::disable);
            finished = inWindow;
          } else if (inWindow) {
            trace.channelRead(b.thread());
          }
        } else if (e instanceof MethodEntryEvent && inWindow) {
          trace.entered(((MethodEntryEvent) e).method());
        }
      }
      events.resume();
      if (finished) {
        break;
      }
    }
    erm.deleteEventRequests(new ArrayList<>(erm.breakpointRequests()));
    erm.deleteEventRequests(new ArrayList<>(erm.methodEntryRequests()));
    vm.dispose();
    return trace;
  }

  private static Method method(ReferenceType type, String name) {
    List<Method> methods = type.methodsByName(name);
    if (methods.size() != 1) {
      throw new IllegalStateException(type.name() + "." + name + ": " + methods);
    }
    return methods.get(0);
  }

  /** What one traced read ran. */
  private static final class Trace {
    /** Class (declaring the method) → its methods entered, in order of first entry, with counts. */
    private final Map<String, Map<String, Integer>> classes = new LinkedHashMap<>();

    private int entries;
    private final List<List<String>> stacks = new ArrayList<>();

    void entered(Method m) {
      entries++;
      classes
          .computeIfAbsent(m.declaringType().name(), k -> new LinkedHashMap<>())
          .merge(m.name(), 1, Integer::sum);
    }

    void channelRead(ThreadReference thread) throws IncompatibleThreadStateException {
      List<String> frames = new ArrayList<>();
      for (StackFrame f : thread.frames()) {
        Location l = f.location();
        String line;
        try {
          line = l.sourceName() + ":" + l.lineNumber();
        } catch (AbsentInformationException e) {
          line = "?";
        }
        frames.add(l.declaringType().name() + "." + l.method().name() + " (" + line + ")");
      }
      stacks.add(frames);
    }

    private static boolean isScr(String className) {
      return (className.startsWith("io.scr.") && !className.startsWith("io.scr.benchmarks."))
          || className.equals(BASE_CLASS);
    }

    private static boolean isHidden(String className) {
      return className.contains("$$Lambda") || className.contains("/0x");
    }

    String report() {
      StringBuilder s = new StringBuilder();
      Set<String> named = new LinkedHashSet<>();
      Set<String> hidden = new LinkedHashSet<>();
      for (String c : classes.keySet()) {
        (isHidden(c) ? hidden : named).add(c);
      }
      s.append(
              "One warm 4 KiB pread through ScrFileSystem (mode A, checksums verified) at file offset ")
          .append(POSITION)
          .append('\n');
      s.append("scr classes whose methods ran: ")
          .append(named.size())
          .append(" (")
          .append(entries)
          .append(" method entries)")
          .append(hidden.isEmpty() ? "" : "; hidden classes (lambdas): " + hidden.size())
          .append('\n');
      for (String c : named) {
        s.append("  ").append(c).append("  ").append(classes.get(c)).append('\n');
      }
      for (String c : hidden) {
        s.append("  [hidden] ").append(c).append("  ").append(classes.get(c)).append('\n');
      }
      s.append("FileChannelImpl.read(ByteBuffer, long) calls: ").append(stacks.size()).append('\n');
      for (List<String> frames : stacks) {
        Set<String> scrClasses = new LinkedHashSet<>();
        int scrFrames = 0;
        for (String f : frames) {
          String c = f.substring(0, f.lastIndexOf('.', f.indexOf(' ')));
          if (isScr(c)) {
            scrFrames++;
            scrClasses.add(c);
          }
        }
        s.append("stack at FileChannelImpl.read: ")
            .append(scrClasses.size())
            .append(" scr classes in ")
            .append(scrFrames)
            .append(" scr frames ")
            .append(scrClasses)
            .append('\n');
        for (String f : frames) {
          String c = f.substring(0, f.lastIndexOf('.', f.indexOf(' ')));
          s.append(isScr(c) ? "  * " : "    ").append(f).append('\n');
        }
      }
      return s.toString();
    }
  }
}
