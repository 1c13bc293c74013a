package io.scr.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.doctor.Doctor;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfsExtension;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code scr doctor --pid} against real separate client processes (a JVM reading through scr from
 * the shim DataNode of this test's cluster, one whose scr cannot reach its socket, one without
 * scr): what the operator would run on a RegionServer's pid.
 */
class DoctorPidTest {
  private static final int LENGTH = 4 * 128 * 1024;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      io.scr.testing.MiniDfs.builder()
          .dataNodes(1)
          .blockSize(128 * 1024)
          .mode(DataNodeMode.SHIM)
          .buildExtension();

  @Test
  void aReadingProcessIsReportedShortCircuitWithItsFigures() throws Exception {
    DFS.dfs().writeRandomFile("/doctor/pid", LENGTH, 3);
    String out = doctorOnChild("read", c -> {});
    assertTrue(line(out, "process").startsWith("OK scr is loaded in process"), out);
    assertTrue(out.contains("scr.client.socket.paths="), "the process's own settings: " + out);
    String reads = line(out, "process-reads");
    assertTrue(reads.startsWith("OK"), out);
    assertTrue(!reads.contains(" 0 short-circuit reads"), "it read short-circuit: " + reads);
    assertTrue(reads.contains("0 fallbacks in the last 2 s"), reads);
    assertTrue(line(out, "process-cache").startsWith("OK"), out);
    assertTrue(line(out, "process-fds").contains("of the process limit"), out);
    assertTrue(line(out, "process-datanode").startsWith("OK"), out);
  }

  @Test
  void aProcessWhoseSocketIsUnreachableIsToldWhyAndWhatToDo() throws Exception {
    DFS.dfs().writeRandomFile("/doctor/pid", LENGTH, 3);
    String out =
        doctorOnChild(
            "read", c -> c.set("scr.client.socket.paths", "/nonexistent-scr-doctor/dn.sock"));
    String reads = line(out, "process-reads");
    assertTrue(reads.startsWith("WARN"), out);
    assertTrue(reads.contains(" 0 short-circuit reads"), reads);
    // The first open's connect fails; the path is dead from then on and admits no open.
    assertTrue(
        reads.contains("DATANODE_UNHEALTHY")
            || reads.contains("BACKING_OFF")
            || reads.contains("CONNECT_FAILED"),
        reads);
    String dn = line(out, "process-datanode");
    assertTrue(dn.startsWith("WARN"), out);
    assertTrue(dn.contains("/nonexistent-scr-doctor/dn.sock"), dn);
    assertTrue(dn.contains("connects fail"), dn);
    assertTrue(dn.contains("may this user traverse"), dn);
  }

  @Test
  void aProcessWithoutScrFailsNamingTheFix() throws Exception {
    String out = doctorOnChild("idle", c -> {});
    assertTrue(line(out, "process").startsWith("FAIL scr is not loaded in process"), out);
    assertTrue(out.contains("scr-bundle-client"), out);
  }

  @Test
  void aProcessThatDoesNotExistIsAFailureNotACrash() {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
    int code = Doctor.run(new String[] {"--pid", "999999999", "--window", "1"}, ps, ps);
    String out = buf.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, out);
    assertTrue(line(out, "process").startsWith("FAIL cannot attach to process 999999999"), out);
  }

  /** The finding of {@code checkId} in the doctor's human output, with its fix line if any. */
  private static String line(String out, String checkId) {
    String[] lines = out.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String[] words = lines[i].trim().split("\\s+", 3);
      if (words.length == 3 && words[1].equals(checkId) && words[0].matches("OK|WARN|FAIL")) {
        String fix =
            i + 1 < lines.length && lines[i + 1].trim().startsWith("fix:") ? lines[i + 1] : "";
        return words[0] + " " + words[2] + " " + fix.trim();
      }
    }
    throw new AssertionError("no " + checkId + " finding in:\n" + out);
  }

  /** Starts a child, runs {@code scr doctor --pid <child> --window 2}, returns its output. */
  private static String doctorOnChild(String mode, Consumer<Configuration> settings)
      throws Exception {
    File dir = Files.createTempDirectory("doctor-pid").toFile();
    File confFile = new File(dir, "client.xml");
    Configuration c = DFS.dfs().clientConf();
    Faults.scrSettings(DFS.dfs(), c);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    settings.accept(c);
    try (OutputStream o = new FileOutputStream(confFile)) {
      c.writeXml(o);
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(new File(System.getProperty("java.home"), "bin/java").getPath());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-opens") || arg.startsWith("-D")) {
        cmd.add(arg);
      }
    }
    cmd.add("-Xmx256m");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(DoctorPidChild.class.getName());
    cmd.add(mode);
    cmd.add(confFile.getPath());
    cmd.add("/doctor/pid");
    cmd.add(Integer.toString(LENGTH));
    Process p = new ProcessBuilder(cmd).directory(dir).redirectErrorStream(true).start();
    CountDownLatch ready = new CountDownLatch(1);
    StringBuilder childOut = new StringBuilder();
    Thread pump =
        new Thread(
            () -> {
              try (java.io.BufferedReader r =
                  new java.io.BufferedReader(
                      new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String l;
                while ((l = r.readLine()) != null) {
                  synchronized (childOut) {
                    childOut.append(l).append('\n');
                  }
                  if (l.contains(DoctorPidChild.READY)) {
                    ready.countDown();
                  }
                }
              } catch (IOException e) {
                // the child ended
              }
            },
            "doctor-child-output");
    pump.setDaemon(true);
    pump.start();
    try {
      if (!ready.await(60, TimeUnit.SECONDS)) {
        synchronized (childOut) {
          throw new AssertionError("the child did not get ready:\n" + childOut);
        }
      }
      ByteArrayOutputStream buf = new ByteArrayOutputStream();
      PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
      int code =
          Doctor.run(new String[] {"--pid", Long.toString(p.pid()), "--window", "2"}, ps, ps);
      String out = buf.toString(StandardCharsets.UTF_8);
      System.out.println("scr doctor --pid " + p.pid() + " (exit " + code + "):\n" + out);
      boolean failed = java.util.regex.Pattern.compile("(?m)^FAIL ").matcher(out).find();
      assertEquals(failed ? 1 : 0, code, out);
      return out;
    } finally {
      p.getOutputStream().close(); // the child exits when its stdin closes
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
      }
    }
  }
}
