package io.scr.core.doctor;

import io.scr.socketpath.HostFacts;
import java.io.File;
import java.io.PrintStream;
import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;

/**
 * {@code scr doctor}: reads the Hadoop configuration a client on this host reads ({@code --conf
 * DIR} or {@code HADOOP_CONF_DIR}; plus {@code --resource FILE} for files an application layers on
 * top, and {@code hbase-default.xml}/{@code hbase-site.xml} when they are on the class path), runs
 * every check and prints each finding with its fix; {@code --json} prints the same as JSON. Exit
 * code 0 when nothing FAILs, 1 otherwise, 2 for bad arguments. {@code --datanode-user USER} names
 * the user the DataNode runs as, when neither its socket nor its process is visible from here (the
 * socket-path rules are judged for that user). {@code --pid PID} instead asks a running JVM what
 * its scr engines did over {@code --window} seconds ({@link ProcessDoctor}).
 *
 * <pre>
 * java -cp "$(hadoop classpath):scr-core.jar:..." io.scr.core.doctor.Doctor [--conf DIR]
 *     [--resource FILE]... [--no-cluster] [--datanode-user USER] [--json]
 * java -cp ... io.scr.core.doctor.Doctor --pid PID [--window SECONDS] [--json]
 * </pre>
 *
 * <p>Not thread-safe; one run per call.
 */
public final class Doctor {
  private Doctor() {}

  /** The checks, in the order they are reported. */
  public static List<Check> defaultChecks() {
    return Collections.unmodifiableList(
        Arrays.asList(
            new EnvironmentChecks.Wiring(),
            new MaskedKeyCheck(),
            new SocketPathCheck(),
            new ProtocolCheck(),
            new EnvironmentChecks.SharedMemory(),
            new FdLimitCheck(),
            new ClusterSizingCheck(),
            new EnvironmentChecks.Libhadoop(),
            new EnvironmentChecks.AccessorZeroCopy()));
  }

  /** Runs {@code checks}; a check that throws yields a FAIL finding naming the exception. */
  public static List<Finding> run(DoctorContext ctx, List<Check> checks) {
    List<Finding> out = new ArrayList<>();
    for (Check c : checks) {
      try {
        out.addAll(c.run(ctx));
      } catch (RuntimeException e) {
        out.add(Finding.fail(c.id(), "the check failed: " + e, "report this as an scr bug"));
      }
    }
    return out;
  }

  /** 1 if any finding FAILs, else 0. */
  public static int exitCode(List<Finding> findings) {
    for (Finding f : findings) {
      if (f.status() == Finding.Status.FAIL) {
        return 1;
      }
    }
    return 0;
  }

  /** Human-readable report. */
  public static String human(List<Finding> findings) {
    StringBuilder sb = new StringBuilder();
    for (Finding f : findings) {
      sb.append(
          String.format(Locale.ROOT, "%-4s %-16s %s%n", f.status(), f.checkId(), f.finding()));
      if (!f.fix().isEmpty()) {
        sb.append(String.format(Locale.ROOT, "     %-16s fix: %s%n", "", f.fix()));
      }
    }
    int fails = 0;
    int warns = 0;
    for (Finding f : findings) {
      fails += f.status() == Finding.Status.FAIL ? 1 : 0;
      warns += f.status() == Finding.Status.WARN ? 1 : 0;
    }
    sb.append(
        fails == 0
            ? "scr doctor: short-circuit reads can work here (" + warns + " warning(s))"
            : "scr doctor: " + fails + " problem(s) stop short-circuit reads");
    return sb.append(System.lineSeparator()).toString();
  }

  /** The findings as a JSON object {@code {"exitCode":n,"findings":[{...}]}}. */
  public static String json(List<Finding> findings) {
    StringBuilder sb = new StringBuilder("{\"exitCode\":").append(exitCode(findings));
    sb.append(",\"findings\":[");
    for (int i = 0; i < findings.size(); i++) {
      Finding f = findings.get(i);
      sb.append(i == 0 ? "" : ",")
          .append("{\"check\":")
          .append(quote(f.checkId()))
          .append(",\"status\":")
          .append(quote(f.status().name()))
          .append(",\"finding\":")
          .append(quote(f.finding()))
          .append(",\"fix\":")
          .append(quote(f.fix()))
          .append('}');
    }
    return sb.append("]}").toString();
  }

  static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"':
          sb.append("\\\"");
          break;
        case '\\':
          sb.append("\\\\");
          break;
        case '\n':
          sb.append("\\n");
          break;
        case '\t':
          sb.append("\\t");
          break;
        default:
          if (ch < 0x20) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
          } else {
            sb.append(ch);
          }
      }
    }
    return sb.append('"').toString();
  }

  /** Entry point; exits with {@link #run(String[], PrintStream, PrintStream)}'s code. */
  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Parses {@code args}, runs the default checks, prints; returns the exit code. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    String confDir = System.getenv("HADOOP_CONF_DIR");
    boolean json = false;
    boolean cluster = true;
    long pid = -1;
    long windowSeconds = 60;
    String dataNodeUser = null;
    List<String> resources = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--conf":
          if (++i >= args.length) {
            return usage(err, "--conf needs a directory");
          }
          confDir = args[i];
          break;
        case "--resource":
          if (++i >= args.length) {
            return usage(err, "--resource needs a file");
          }
          resources.add(args[i]);
          break;
        case "--json":
          json = true;
          break;
        case "--datanode-user":
          if (++i >= args.length) {
            return usage(err, "--datanode-user needs the DataNode's user name or uid");
          }
          dataNodeUser = args[i];
          break;
        case "--no-cluster":
          cluster = false;
          break;
        case "--pid":
          if (++i >= args.length) {
            return usage(err, "--pid needs the process id of a running JVM");
          }
          try {
            pid = Long.parseLong(args[i]);
          } catch (NumberFormatException e) {
            return usage(err, "--pid " + args[i] + ": not a process id");
          }
          break;
        case "--window":
          if (++i >= args.length) {
            return usage(err, "--window needs a number of seconds");
          }
          try {
            windowSeconds = Long.parseLong(args[i]);
          } catch (NumberFormatException e) {
            windowSeconds = -1;
          }
          if (windowSeconds < 1) {
            return usage(err, "--window " + args[i] + ": give whole seconds, at least 1");
          }
          break;
        case "-h":
        case "--help":
          usage(out, null);
          return 0;
        default:
          return usage(err, "unknown argument " + args[i]);
      }
    }
    if (pid >= 0) {
      if (!json) {
        out.println(
            "Watching process " + pid + " for " + windowSeconds + " s (--window to change) ...");
        out.flush();
      }
      List<Finding> findings =
          ProcessDoctor.examine(pid, Duration.ofSeconds(windowSeconds), ProcessDoctor::sleep);
      out.print(json ? json(findings) + System.lineSeparator() : human(findings));
      out.flush();
      return exitCode(findings);
    }
    DoctorContext ctx;
    try {
      ctx = context(confDir, resources, cluster, dataNodeUser, HostFacts.local());
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    List<Finding> findings = run(ctx, defaultChecks());
    out.print(json ? json(findings) + System.lineSeparator() : human(findings));
    out.flush();
    return exitCode(findings);
  }

  /**
   * The configuration a client would read: Hadoop defaults, then {@code core-site.xml} and {@code
   * hdfs-site.xml} from {@code confDir}, then {@code hbase-default.xml} and {@code hbase-site.xml}
   * if the class path has them (as an HBase process loads them), then {@code resources}.
   */
  static DoctorContext context(String confDir, List<String> resources, boolean cluster) {
    return context(confDir, resources, cluster, null, HostFacts.local());
  }

  /**
   * As {@link #context(String, List, boolean)}, judging socket paths for the DataNode user {@code
   * dataNodeUser} (a name {@code host} knows, or a uid; null: found from the socket or the DataNode
   * process).
   */
  static DoctorContext context(
      String confDir,
      List<String> resources,
      boolean cluster,
      String dataNodeUser,
      HostFacts host) {
    Integer dataNodeUid = null;
    if (dataNodeUser != null) {
      if (dataNodeUser.chars().allMatch(Character::isDigit) && !dataNodeUser.isEmpty()) {
        dataNodeUid = Integer.valueOf(dataNodeUser);
      } else {
        java.util.OptionalInt uid = host.uidOf(dataNodeUser);
        if (!uid.isPresent()) {
          throw new IllegalArgumentException(
              "--datanode-user "
                  + dataNodeUser
                  + ": no such user in /etc/passwd; give the DataNode user's uid instead");
        }
        dataNodeUid = uid.getAsInt();
      }
    }
    Configuration conf = new Configuration();
    conf.addResource("hdfs-default.xml");
    List<DoctorContext.Layer> layers = new ArrayList<>();
    List<String> files = new ArrayList<>();
    if (confDir != null) {
      File dir = new File(confDir);
      if (!dir.isDirectory()) {
        throw new IllegalArgumentException("configuration directory " + confDir + " not found");
      }
      for (String name : new String[] {"core-site.xml", "hdfs-site.xml"}) {
        File f = new File(dir, name);
        if (f.isFile()) {
          files.add(f.getPath());
        }
      }
    }
    for (String name : new String[] {"hbase-default.xml", "hbase-site.xml"}) {
      URL u = Doctor.class.getClassLoader().getResource(name);
      if (u != null) {
        addLayer(conf, layers, name, u);
      }
    }
    List<String> all = new ArrayList<>(files);
    all.addAll(resources);
    for (String f : all) {
      File file = new File(f);
      if (!file.isFile()) {
        throw new IllegalArgumentException("configuration file " + f + " not found");
      }
      try {
        addLayer(conf, layers, file.getPath(), file.toURI().toURL());
      } catch (java.net.MalformedURLException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    }
    // Site files come first in load order, before what HBase layers on them.
    List<DoctorContext.Layer> ordered = new ArrayList<>();
    for (DoctorContext.Layer l : layers) {
      if (files.contains(l.name())) {
        ordered.add(l);
      }
    }
    for (DoctorContext.Layer l : layers) {
      if (!files.contains(l.name())) {
        ordered.add(l);
      }
    }
    Configuration effective = new Configuration();
    effective.addResource("hdfs-default.xml");
    DoctorContext.Builder b =
        DoctorContext.newBuilder(effective).contactCluster(cluster).hostFacts(host);
    if (dataNodeUid != null) {
      b.dataNodeUid(dataNodeUid);
    }
    for (DoctorContext.Layer l : ordered) {
      effective.addResource(l.alone());
      b.layer(l);
    }
    return b.build();
  }

  private static void addLayer(
      Configuration conf, List<DoctorContext.Layer> layers, String name, URL url) {
    Configuration alone = new Configuration(false);
    alone.addResource(url);
    alone.size(); // load now, so a broken file fails here with its name
    layers.add(new DoctorContext.Layer(name, alone));
  }

  private static int usage(PrintStream s, String error) {
    if (error != null) {
      s.println("scr doctor: " + error);
    }
    s.println(
        "usage: scr doctor [--conf HADOOP_CONF_DIR] [--resource FILE]... [--no-cluster]"
            + " [--datanode-user USER] [--json]\n"
            + "       scr doctor --pid PID [--window SECONDS] [--json]   (a running JVM: what its"
            + " scr engines did in the last SECONDS, default 60)");
    return error == null ? 0 : 2;
  }
}
