package io.scr.bundle.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The packaged client bundle beside a stock Hadoop 3.4.2 classpath (the test classpath holds
 * Hadoop's jars and the bundle, not scr's own module jars): its contents, where its classes load
 * from, and short-circuit reads through both integration points against a stock DataNode with
 * libhadoop (deployment mode A), enabled only by configuration keys. The test refers to scr classes
 * only by name, as a user's configuration does.
 */
class ClientBundleTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK + 12_345;
  private static final String FILE = "/bundle/client";

  /**
   * Every class in the bundle lives under one of these: scr itself (including its one class in
   * Hadoop's package), the relocated pure-Java dependencies, and the JNI-bound ones kept as they
   * are (junixsocket, jnr-ffi, jffi, jnr's assemblers).
   */
  private static final List<String> ALLOWED_CLASS_PREFIXES =
      List.of(
          "io/scr/core/",
          "io/scr/shm/",
          "io/scr/cache/",
          "io/scr/socketpath/",
          "io/scr/config/",
          "io/scr/shaded/",
          "org/apache/hadoop/hdfs/Scr",
          "org/newsclub/",
          "jnr/ffi/",
          "jnr/a64asm/",
          "jnr/x86asm/",
          "com/kenai/jffi/",
          "com/kenai/jnr/x86asm/");

  static {
    // Process-wide singletons (junixsocket's and scr-shm's native probes and cleaner threads) are
    // created before the extension takes its leak baseline.
    initializeSingletons();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().dataNodes(1).blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static byte[] data;

  @BeforeAll
  static void write() throws IOException {
    data = DFS.dfs().writeRandomFile(FILE, LEN, 11);
  }

  @AfterAll
  static void releaseAccessorEngines() throws ReflectiveOperationException {
    Class.forName("io.scr.core.hdfs.ScrReplicaAccessorBuilder")
        .getMethod("releaseAll")
        .invoke(null);
  }

  private static Path bundle() {
    String jar = System.getProperty("scr.bundle.jar");
    assertTrue(
        jar != null && !jar.isEmpty(), "surefire sets scr.bundle.jar to the packaged bundle");
    return Paths.get(jar).toAbsolutePath();
  }

  private static void initializeSingletons() {
    try {
      ClassLoader loader = ClientBundleTest.class.getClassLoader();
      Class.forName("io.scr.shm.ShmSupport", true, loader).getMethod("isAvailable").invoke(null);
      Class.forName("io.scr.shm.Segment", true, loader);
      Class.forName("io.scr.shm.SharedMemoryFd", true, loader);
      Class<?> socket = Class.forName("org.newsclub.net.unix.AFUNIXSocket", true, loader);
      ((AutoCloseable) socket.getMethod("newInstance").invoke(null)).close();
    } catch (Exception e) {
      throw new IllegalStateException("the client bundle's native parts did not initialize", e);
    }
  }

  @Test
  void bundleHoldsScrAndItsJniDependenciesButNoHostLibraries() throws IOException {
    List<String> unexpected = new ArrayList<>();
    boolean junixsocketNative = false;
    boolean jffiNative = false;
    boolean relocatedAsm = false;
    try (JarFile jar = new JarFile(bundle().toFile())) {
      assertEquals("true", jar.getManifest().getMainAttributes().getValue("Multi-Release"));
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        String plain = name.replaceFirst("^META-INF/versions/\\d+/", "");
        if (plain.endsWith(".class")
            && !plain.equals("module-info.class")
            && ALLOWED_CLASS_PREFIXES.stream().noneMatch(plain::startsWith)) {
          unexpected.add(name);
        }
        junixsocketNative |= name.contains("junixsocket") && name.endsWith(".so");
        jffiNative |= name.startsWith("jni/x86_64-Linux/") && name.endsWith(".so");
        relocatedAsm |= name.startsWith("io/scr/shaded/org/objectweb/asm/");
      }
    }
    assertTrue(
        unexpected.isEmpty(), "classes outside the bundle's allowed packages: " + unexpected);
    assertTrue(junixsocketNative, "junixsocket's JNI library for Linux is in the bundle");
    assertTrue(jffiNative, "jffi's JNI library for x86_64 Linux is in the bundle");
    assertTrue(relocatedAsm, "asm is relocated under io.scr.shaded");
  }

  @Test
  void scrAndItsDependenciesLoadFromTheBundle() throws Exception {
    for (String name :
        List.of(
            "io.scr.core.hdfs.ScrFileSystem",
            "io.scr.core.hdfs.ScrReplicaAccessorBuilder",
            "io.scr.shm.SlotPool",
            "io.scr.cache.LeaseCache",
            "org.newsclub.net.unix.AFUNIXSocket",
            "jnr.ffi.LibraryLoader",
            "com.kenai.jffi.Foreign")) {
      Class<?> c = Class.forName(name);
      Path from = Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI());
      assertEquals(bundle(), from.toAbsolutePath(), name + " loads from the bundle");
    }
    // The host's Hadoop stays the host's.
    Path hadoop =
        Paths.get(FileSystem.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    assertTrue(hadoop.getFileName().toString().startsWith("hadoop-common-"), hadoop.toString());
    assertFalse(
        hadoop.equals(bundle()), "Hadoop classes must come from Hadoop's jars, not the bundle");
  }

  @Test
  void scrFileSystemFromTheBundleShortCircuitsEveryByte() throws IOException {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
                  c.set("scr.client.context", "bundle-fs");
                });
    assertEquals("io.scr.core.hdfs.ScrFileSystem", fs.getClass().getName());
    assertReadsShortCircuit(fs, LEN);
  }

  @Test
  void replicaAccessorFromTheBundleShortCircuitsWithoutStockShortCircuit() throws IOException {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  // Stock short-circuit off: any short-circuit byte counted comes from scr.
                  c.setBoolean("dfs.client.read.shortcircuit", false);
                  c.set(
                      "dfs.client.replica.accessor.builder.classes",
                      "io.scr.core.hdfs.ScrReplicaAccessorBuilder");
                  c.set("scr.client.context", "bundle-accessor");
                });
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", fs.getClass().getName());
    assertReadsShortCircuit(fs, LEN);
  }

  private static void assertReadsShortCircuit(FileSystem fs, long expectedShortCircuit)
      throws IOException {
    try (FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(FILE))) {
      byte[] all = new byte[LEN];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      long scBytes = ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
      assertEquals(expectedShortCircuit, scBytes, "short-circuit bytes");
    }
  }
}
