package io.scr.core.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.shm.ShmSupport;
import io.scr.socketpath.EffectiveUid;
import io.scr.socketpath.HostFacts;
import io.scr.socketpath.SocketPathRules;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.RequiresRoot;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.newsclub.net.unix.AFUNIXSocket;

/**
 * {@code scr doctor} against fixtures (bad permissions, missing socket, an fd limit too low for the
 * cache, a masked key) and against a live stock DataNode (protocol and fd passing).
 */
class DoctorTest {
  static {
    try {
      ShmSupport.isAvailable();
      Class.forName("io.scr.shm.Segment");
      Class.forName("io.scr.shm.SharedMemoryFd");
      AFUNIXSocket.newInstance().close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(1)
          .blockSize(1 << 20)
          .mode(DataNodeMode.STOCK_SCR)
          .buildExtension();

  /** Where the tests make their directories; its ancestors are outside the tests' control. */
  private static final Path BASE = Paths.get(System.getProperty("java.io.tmpdir")).toAbsolutePath();

  private static Path tmp(String name) throws Exception {
    Files.createDirectories(BASE);
    return Files.createTempDirectory(BASE, name);
  }

  private static Configuration conf(String socketPath) {
    Configuration c = new Configuration(false);
    c.set("dfs.domain.socket.path", socketPath);
    c.set(
        "dfs.client.replica.accessor.builder.classes",
        "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
    return c;
  }

  private static List<Finding> of(List<Finding> all, String id) {
    return all.stream().filter(f -> f.checkId().equals(id)).collect(Collectors.toList());
  }

  private static List<Finding> run(DoctorContext ctx, Check check) {
    return Doctor.run(ctx, Collections.singletonList(check));
  }

  @Test
  void worldWritableParentFailsWithTheChmodFix() throws Exception {
    Path dir = tmp("ww");
    Files.setPosixFilePermissions(
        dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
    String socket = dir.resolve("dn._PORT.sock").toString();
    List<Finding> f =
        run(
            DoctorContext.newBuilder(conf(socket))
                .dataNodeUid(0)
                .trustedDirectoryForTests(BASE)
                .build(),
            new SocketPathCheck());
    Finding bad = f.get(0);
    assertEquals(Finding.Status.FAIL, bad.status(), f.toString());
    assertTrue(bad.finding().contains(dir + " is world-writable (mode 0777)"), bad.finding());
    assertTrue(bad.fix().contains("chmod o-w " + dir), bad.fix());
    assertEquals(1, Doctor.exitCode(f));
  }

  @Test
  @RequiresRoot("chown and chgrp to another user")
  void parentsOwnedByOthersOrGroupWritableFail() throws Exception {
    Path dir = tmp("own");
    Path group = Files.createDirectory(dir.resolve("group"));
    Files.setPosixFilePermissions(
        group, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxr-x"));
    Files.setAttribute(group, "unix:gid", 4242);
    Files.setAttribute(group, "unix:uid", 4343);
    String socket = group.resolve("dn.sock").toString();
    List<Finding> f =
        run(
            DoctorContext.newBuilder(conf(socket))
                .dataNodeUid(999)
                .trustedDirectoryForTests(BASE)
                .build(),
            new SocketPathCheck());
    String all = f.get(0).fix();
    // The owners are real here (chown), so the messages carry whatever names this host gives
    // them: a deployment test may have created a user with uid 999.
    HostFacts host = HostFacts.local();
    String dataNodeUser = host.userName(999) == null ? "999" : host.userName(999);
    assertTrue(all.contains(group + " is group-writable by gid 4242"), all);
    assertTrue(
        all.contains(
            group
                + " is owned by "
                + host.describeUid(4343)
                + ", neither root nor the DataNode user, "
                + host.describeUid(999)),
        all);
    assertTrue(all.contains("Run: chown " + dataNodeUser + " " + group), all);
    assertEquals(1, Doctor.exitCode(f));
  }

  @Test
  void missingSocketFailsAndSaysWhatToStart() throws Exception {
    Path dir = tmp("missing");
    String socket = dir.resolve("dn._PORT.sock").toString();
    // The directory is the DataNode's: this test's user plays the DataNode user (root or not).
    List<Finding> f =
        run(
            DoctorContext.newBuilder(conf(socket))
                .dataNodeUid(EffectiveUid.self())
                .trustedDirectoryForTests(BASE)
                .build(),
            new SocketPathCheck());
    assertEquals(1, f.size(), f.toString());
    assertEquals(Finding.Status.FAIL, f.get(0).status());
    assertTrue(
        f.get(0).finding().contains("socket " + socket + " does not exist"), f.get(0).finding());
    assertTrue(f.get(0).fix().contains("Listening on UNIX domain socket"), f.get(0).fix());
    List<Finding> none = run(DoctorContext.newBuilder(conf("")).build(), new SocketPathCheck());
    assertTrue(none.get(0).finding().contains("no DataNode socket path is configured"));
  }

  @Test
  void fdLimitTooLowForTheCacheFails() {
    Configuration c = conf("/x/dn.sock");
    c.setInt("scr.cache.capacity", 2000);
    List<Finding> f = run(DoctorContext.newBuilder(c).fdLimit(1024).build(), new FdLimitCheck());
    assertEquals(Finding.Status.FAIL, f.get(0).status());
    assertTrue(
        f.get(0)
            .finding()
            .startsWith(
                "scr.cache.capacity=2000 needs 4000 fds, but RLIMIT_NOFILE 1024 leaves the cache 128"),
        f.get(0).finding());
    assertTrue(f.get(0).fix().contains("raise the fd limit to at least 10048"), f.get(0).fix());
    // An explicit fd budget too small for the capacity names the budget key.
    Configuration b = conf("/x/dn.sock");
    b.setInt("scr.cache.capacity", 100);
    b.setLong("scr.cache.fd.budget", 50);
    List<Finding> small =
        run(DoctorContext.newBuilder(b).fdLimit(65536).build(), new FdLimitCheck());
    assertEquals(Finding.Status.FAIL, small.get(0).status());
    assertTrue(
        small.get(0).finding().contains("scr.cache.fd.budget (with RLIMIT_NOFILE 65536) gives"),
        small.get(0).finding());
    assertTrue(
        small.get(0).fix().startsWith("raise scr.cache.fd.budget to 200"), small.get(0).fix());
    // Derived capacity with a low limit: a warning about the limit itself.
    List<Finding> low =
        run(DoctorContext.newBuilder(conf("/x")).fdLimit(4096).build(), new FdLimitCheck());
    assertEquals(Finding.Status.WARN, low.get(0).status());
    assertTrue(low.get(0).finding().contains("RLIMIT_NOFILE is 4096"), low.get(0).finding());
    List<Finding> fine =
        run(DoctorContext.newBuilder(conf("/x")).fdLimit(65536).build(), new FdLimitCheck());
    assertEquals(Finding.Status.OK, fine.get(0).status(), fine.toString());
    assertTrue(
        fine.get(0).finding().contains("cache capacity 15872 replicas"), fine.get(0).finding());
  }

  @Test
  void hbaseDefaultsMaskingSiteKeysFailThroughTheCommandLine() throws Exception {
    Path dir = tmp("conf");
    Files.write(
        dir.resolve("hdfs-site.xml"),
        xml(
                "dfs.client.read.shortcircuit",
                "true",
                "dfs.domain.socket.path",
                "/var/run/hdfs/dn.sock")
            .getBytes(StandardCharsets.UTF_8));
    Path hbaseDefault = dir.resolve("hbase-default.xml");
    Files.write(
        hbaseDefault,
        // What HBase's hbase-default.xml shipped before HBASE-25449 (Hadoop ignores an empty
        // <value/>, so "none" is the value that masks).
        xml("dfs.client.read.shortcircuit", "false", "dfs.domain.socket.path", "none")
            .getBytes(StandardCharsets.UTF_8));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code =
        Doctor.run(
            new String[] {
              "--conf",
              dir.toString(),
              "--resource",
              hbaseDefault.toString(),
              "--no-cluster",
              "--json"
            },
            new PrintStream(out, true, "UTF-8"),
            System.err);
    String json = out.toString("UTF-8");
    assertEquals(1, code, json);
    assertTrue(json.startsWith("{\"exitCode\":1,\"findings\":["), json);
    assertTrue(
        json.contains(
            "\"check\":\"masked-keys\",\"status\":\"FAIL\",\"finding\":\"dfs.client.read.shortcircuit = 'true' in "
                + dir.resolve("hdfs-site.xml")
                + " is masked by 'false' in "
                + hbaseDefault),
        json);
    assertTrue(
        json.contains(
            "dfs.domain.socket.path = '/var/run/hdfs/dn.sock' in "
                + dir.resolve("hdfs-site.xml")
                + " is masked by 'none'"),
        json);
    assertTrue(json.contains("for HBase: hbase-site.xml"), json);
    // The effective configuration is the masked one: the socket check sees the bogus path.
    assertTrue(json.contains("'none' must be an absolute path naming a file"), json);

    ByteArrayOutputStream human = new ByteArrayOutputStream();
    assertEquals(
        2, Doctor.run(new String[] {"--bogus"}, System.out, new PrintStream(human, true, "UTF-8")));
    assertTrue(human.toString("UTF-8").contains("unknown argument --bogus"));
  }

  private static String xml(String... kv) {
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (int i = 0; i < kv.length; i += 2) {
      sb.append("<property><name>")
          .append(kv[i])
          .append("</name><value>")
          .append(kv[i + 1])
          .append("</value></property>\n");
    }
    return sb.append("</configuration>\n").toString();
  }

  @Test
  void theAccessorWithStockShortCircuitOnWarnsThatZeroCopyReadsAreCopies() {
    Configuration c = new Configuration(false);
    c.set(
        "dfs.client.replica.accessor.builder.classes",
        "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
    c.setBoolean("dfs.client.read.shortcircuit", true);
    DoctorContext ctx = DoctorContext.newBuilder(c).fdLimit(65536).build();
    List<Finding> warned = run(ctx, new EnvironmentChecks.AccessorZeroCopy());
    assertEquals(Finding.Status.WARN, warned.get(0).status(), warned.toString());
    assertTrue(
        warned.get(0).finding().contains("UnsupportedOperationException"), warned.toString());

    c.setBoolean("dfs.client.mmap.enabled", false); // stock would not map either
    assertEquals(
        Finding.Status.OK,
        run(
                DoctorContext.newBuilder(c).fdLimit(65536).build(),
                new EnvironmentChecks.AccessorZeroCopy())
            .get(0)
            .status());
    c.setBoolean("dfs.client.mmap.enabled", true);
    c.setBoolean("dfs.client.read.shortcircuit", false); // stock would read over TCP, unmapped
    assertEquals(
        Finding.Status.OK,
        run(
                DoctorContext.newBuilder(c).fdLimit(65536).build(),
                new EnvironmentChecks.AccessorZeroCopy())
            .get(0)
            .status());
  }

  @Test
  void liveDataNodeAnswersTheProtocolAndPassesAnFd() throws Exception {
    Configuration c = DFS.dfs().clientConf();
    c.set(
        "dfs.client.replica.accessor.builder.classes",
        "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
    DoctorContext ctx =
        DoctorContext.newBuilder(c)
            .fdLimit(65536)
            .trustedDirectoryForTests(DFS.dfs().socketDir().getParent())
            .build();
    List<Finding> all = Doctor.run(ctx, Doctor.defaultChecks());
    List<Finding> protocol = of(all, "protocol");
    assertEquals(1, protocol.size(), all.toString());
    assertEquals(Finding.Status.OK, protocol.get(0).status(), protocol.toString());
    assertTrue(protocol.get(0).finding().contains("passed an fd"), protocol.get(0).finding());
    assertEquals(Finding.Status.OK, of(all, "socket-path").get(0).status(), all.toString());
    assertEquals(Finding.Status.OK, of(all, "scr-config").get(0).status());
    assertEquals(Finding.Status.OK, of(all, "libhadoop").get(0).status());
    Finding sizing = of(all, "cache-vs-cluster").get(0);
    assertEquals(Finding.Status.OK, sizing.status(), sizing.toString());
    assertTrue(sizing.finding().contains("/ 1 DataNodes"), sizing.finding());
    assertEquals(0, Doctor.exitCode(all), Doctor.human(all));
    // The verdict must follow this JVM's shared memory: OK where segments map, WARN (with the
    // cause) where they do not. (Before, any status passed.)
    Finding shm = of(all, "shared-memory").get(0);
    if (ShmSupport.isAvailable()) {
      assertEquals(Finding.Status.OK, shm.status(), shm.toString());
      assertTrue(shm.finding().startsWith("shared memory usable ("), shm.finding());
    } else {
      assertEquals(Finding.Status.WARN, shm.status(), shm.toString());
      assertTrue(
          shm.finding().contains(String.valueOf(ShmSupport.unavailabilityCause())), shm.finding());
    }
  }

  @Test
  void aClientUserIsToldInOneLineThatSizingNeedsTheSuperuser() throws Exception {
    Configuration c = DFS.dfs().clientConf();
    DoctorContext ctx = DoctorContext.newBuilder(c).fdLimit(65536).build();
    // Any user but the one that started the NameNode (its superuser) is refused datanodeReport.
    List<Finding> f =
        org.apache.hadoop.security.UserGroupInformation.createRemoteUser("scr-doctor-client")
            .doAs(
                (java.security.PrivilegedExceptionAction<List<Finding>>)
                    () -> run(ctx, new ClusterSizingCheck()));
    assertEquals(1, f.size(), f.toString());
    Finding sizing = f.get(0);
    assertEquals(Finding.Status.WARN, sizing.status(), sizing.toString());
    assertTrue(sizing.finding().contains("only to the HDFS superuser"), sizing.finding());
    assertTrue(sizing.fix().contains("sudo -u hdfs scr doctor"), sizing.fix());
    assertFalse(sizing.toString().contains("\n"), "one line, no stack trace: " + sizing);
    assertFalse(sizing.toString().contains("\tat "), sizing.toString());
  }

  @Test
  void stickyTmpIsRejectedLikeStockButNeverToBeChmodded() {
    List<String> v = SocketPathRules.violations(Paths.get("/tmp/dn_socket"), 0);
    String all = String.join("; ", v);
    assertTrue(all.contains("/tmp is world-writable (mode 1777, sticky"), all);
    assertFalse(all.contains("chmod o-w /tmp"), "that would break the host: " + all);
    assertFalse(all.contains("chmod") || all.contains("chown"), all);
    assertTrue(all.contains("/var/run/hdfs-sockets"), all);
  }

  @Test
  void anAncestorIsNeverToBeChownedOnlyTheSocketsOwnDirectory() throws Exception {
    Path home = tmp("home");
    Path sockets = Files.createDirectory(home.resolve("sockets"));
    Files.setPosixFilePermissions(
        home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
    String all = String.join("; ", SocketPathRules.violations(sockets.resolve("dn"), 0, BASE));
    assertTrue(all.contains(home + " is world-writable (mode 0777)"), all);
    assertFalse(all.contains("chmod o-w " + home), "an ancestor (a home?) is not HDFS's: " + all);
  }

  @Test
  void aClientUserIsNotTakenForTheDataNodeUser() throws Exception {
    Path dir = tmp("owner");
    Path sockets = Files.createDirectory(dir.resolve("sockets"));
    // The socket directory belongs to uid 4343 (its owner as the rules see it; no root needed).
    FakeHost host = new FakeHost().own(sockets, 0755, 4343, 4343);
    String socket = sockets.resolve("dn._PORT.sock").toString();
    Path noProcesses = tmp("proc-empty");
    // No socket to stat and no DataNode process: the DataNode's user is unknown, so the doctor
    // must not judge the owner against its own uid (before: "neither root nor the DataNode user
    // (uid <the doctor's uid>)").
    List<Finding> f =
        run(
            DoctorContext.newBuilder(conf(socket))
                .trustedDirectoryForTests(BASE)
                .procRootForTests(noProcesses)
                .hostFacts(host)
                .build(),
            new SocketPathCheck());
    String all = f.toString();
    assertFalse(all.contains("neither root nor the DataNode user"), all);
    assertTrue(all.contains("the DataNode's user is unknown here"), all);
    assertTrue(all.contains(sockets + " is owned by uid 4343, which is right if"), all);
    assertFalse(all.contains("uid 0") || all.contains("chown"), all);

    // A DataNode process visible in the process table names the DataNode user: its effective uid
    // from its status file, not the owner of its /proc entry (root for a DataNode that changed
    // user after start, as under jsvc; here the entry is owned by whoever runs the test).
    Path proc = tmp("proc");
    Path pid = Files.createDirectory(proc.resolve("4711"));
    Files.write(
        pid.resolve("cmdline"),
        ("jsvc.exec\0-Xmx1g\0" + SocketPathCheck.SECURE_DATANODE_MAIN + "\0")
            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    Files.write(
        pid.resolve("status"),
        "Name:\tjsvc\nUid:\t0\t995\t995\t995\nGid:\t0\t0\t0\t0\n"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    Files.createDirectory(proc.resolve("self"));
    // Named here: this host's user database may name uid 995 itself (a system user).
    host.user(995, "dn-test");
    f =
        run(
            DoctorContext.newBuilder(conf(socket))
                .trustedDirectoryForTests(BASE)
                .procRootForTests(proc)
                .hostFacts(host)
                .build(),
            new SocketPathCheck());
    all = f.toString();
    assertTrue(
        all.contains(
            sockets
                + " is owned by uid 4343, neither root nor the DataNode user, uid 995 (dn-test)"),
        all);
    assertTrue(all.contains("Run: chown dn-test " + sockets), all);
    assertFalse(all.contains("chown 0") || all.contains("chown root"), all);
    assertFalse(all.contains("the DataNode's user is unknown here"), all);
  }
}
