package io.scr.bundle.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import io.scr.testing.StockNative;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The packaged shim bundle on a DataNode's classpath beside Hadoop 3.4.2, which brings its own
 * unshaded Netty: the DataNode loads {@code io.scr.shim.ScrShimPlugin} from the bundle through
 * {@code dfs.datanode.plugins}, the shim serves on relocated Netty with the renamed epoll library,
 * and both a stock client with libhadoop (deployment mode C) and the scr client the bundle carries
 * (mode B) short-circuit every byte through it. scr classes are referred to by name only.
 */
class ShimBundleTest {
  private static final int BLOCK = 1 << 20;
  private static final int LEN = 2 * BLOCK + 4_321;
  private static final String FILE = "/bundle/shim";
  private static final String SHADED_EPOLL_LIBRARY =
      "libio_scr_shaded_netty_transport_native_epoll_x86_64";

  private static final List<String> ALLOWED_CLASS_PREFIXES =
      List.of(
          "io/scr/shim/",
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
    // Process-wide singletons (scr-shm's cleaners, jnr-ffi's finalizer, junixsocket's probe) are
    // created before the extension takes its leak baseline.
    try {
      ClassLoader loader = ShimBundleTest.class.getClassLoader();
      Class.forName("io.scr.shm.ShmSupport", true, loader).getMethod("isAvailable").invoke(null);
      Class.forName("io.scr.shm.Segment", true, loader);
      Class.forName("io.scr.shm.SharedMemoryFd", true, loader);
      Class<?> socket = Class.forName("org.newsclub.net.unix.AFUNIXSocket", true, loader);
      ((AutoCloseable) socket.getMethod("newInstance").invoke(null)).close();
    } catch (Exception e) {
      throw new IllegalStateException("the shim bundle's native parts did not initialize", e);
    }
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(1)
          .blockSize(BLOCK)
          .mode(DataNodeMode.SHIM)
          .configure(c -> c.set("dfs.datanode.plugins", BundleTestShimPlugin.class.getName()))
          .buildExtension();

  private static byte[] data;

  @BeforeAll
  static void write() throws IOException {
    StockNative.requireAvailable(); // the mode-C client is stock, with libhadoop
    data = DFS.dfs().writeRandomFile(FILE, LEN, 23);
  }

  private static Path bundle() {
    String jar = System.getProperty("scr.bundle.jar");
    assertTrue(
        jar != null && !jar.isEmpty(), "surefire sets scr.bundle.jar to the packaged bundle");
    return Paths.get(jar).toAbsolutePath();
  }

  private static Path origin(String className) throws Exception {
    Class<?> c = Class.forName(className);
    return Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI())
        .toAbsolutePath();
  }

  @Test
  void bundleRelocatesNettyAndRenamesItsEpollLibrary() throws IOException {
    List<String> unexpected = new ArrayList<>();
    List<String> nativeLibraries = new ArrayList<>();
    try (JarFile jar = new JarFile(bundle().toFile())) {
      for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
        String name = e.nextElement().getName();
        String plain = name.replaceFirst("^META-INF/versions/\\d+/", "");
        if (plain.endsWith(".class")
            && !plain.equals("module-info.class")
            && ALLOWED_CLASS_PREFIXES.stream().noneMatch(plain::startsWith)) {
          unexpected.add(name);
        }
        if (name.startsWith("META-INF/native/") && name.endsWith(".so")) {
          nativeLibraries.add(name);
        }
      }
    }
    assertTrue(
        unexpected.isEmpty(), "classes outside the bundle's allowed packages: " + unexpected);
    assertEquals(
        List.of("META-INF/native/" + SHADED_EPOLL_LIBRARY + ".so"),
        nativeLibraries,
        "Netty's epoll library renamed for the relocated package, and no unrenamed copy");
  }

  @Test
  void shimAndShadedNettyLoadFromTheBundleBesideHadoopsNetty() throws Exception {
    for (String name :
        List.of(
            "io.scr.shim.ScrShimPlugin",
            "io.scr.core.ScrKeys",
            "io.scr.shaded.io.netty.channel.epoll.Epoll",
            "jnr.ffi.LibraryLoader",
            "org.newsclub.net.unix.AFUNIXSocket")) {
      assertEquals(bundle(), origin(name), name + " loads from the bundle");
    }
    // Hadoop's own Netty is still here, from its own jar: the two do not collide.
    assertFalse(bundle().equals(origin("io.netty.channel.epoll.Epoll")));

    Class<?> epoll = Class.forName("io.scr.shaded.io.netty.channel.epoll.Epoll");
    boolean available = (Boolean) epoll.getMethod("isAvailable").invoke(null);
    Object cause = epoll.getMethod("unavailabilityCause").invoke(null);
    assertTrue(available, "shaded Netty epoll unavailable: " + cause);
    String maps =
        new String(Files.readAllBytes(Paths.get("/proc/self/maps")), StandardCharsets.UTF_8);
    assertTrue(
        maps.contains(SHADED_EPOLL_LIBRARY), "the renamed epoll library is mapped in this JVM");
  }

  @Test
  void stockClientWithLibhadoopShortCircuitsThroughTheBundledShim() throws IOException {
    FileSystem fs = DFS.dfs().fileSystem(); // SHIM mode: dfs.domain.socket.path = shim socket
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", fs.getClass().getName());
    assertReadsShortCircuit(fs);
  }

  @Test
  void bundledScrClientShortCircuitsThroughTheBundledShim() throws IOException {
    FileSystem fs =
        DFS.dfs()
            .newFileSystem(
                c -> {
                  c.set("fs.hdfs.impl", "io.scr.core.hdfs.ScrFileSystem");
                  c.set("scr.client.context", "shim-bundle");
                });
    assertEquals("io.scr.core.hdfs.ScrFileSystem", fs.getClass().getName());
    assertReadsShortCircuit(fs);
  }

  private static void assertReadsShortCircuit(FileSystem fs) throws IOException {
    try (FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(FILE))) {
      byte[] all = new byte[LEN];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(
          LEN,
          ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead(),
          "short-circuit bytes");
    }
  }
}
