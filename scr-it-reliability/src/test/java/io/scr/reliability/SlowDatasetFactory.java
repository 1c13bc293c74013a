package io.scr.reliability;

import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataStorage;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.FsDatasetFactory;

/**
 * A DataNode dataset for {@link ProcessHdfs} that can make the DataNode slow (not hung) at serving
 * short-circuit fd requests (op 87), switched on and off while the DataNode runs.
 *
 * <p>Set through {@code dfs.datanode.fsdataset.factory}; the real {@code FsDatasetImpl} does all
 * the work behind a {@link Proxy} of {@link FsDatasetSpi}. While the file named by the system
 * property {@value #DELAY_FILE_PROPERTY} holds a number of milliseconds, every op 87 waits that
 * long before its fds are opened: the {@code getBlockInputStream} that a stock DataNode's {@code
 * requestShortCircuitFdsForRead} or the shim (on its {@code scr-shim-*} threads) calls first. TCP
 * reads, which open the same stream from {@code BlockSender}, are not delayed, nor is the meta file
 * opened next. Thread-safe: the file is read on every call.
 */
public final class SlowDatasetFactory extends FsDatasetSpi.Factory<FsDatasetSpi<?>> {
  static final String DELAY_FILE_PROPERTY = "scr.it.op87.delay.file";

  @Override
  public FsDatasetSpi<?> newInstance(DataNode datanode, DataStorage storage, Configuration conf)
      throws IOException {
    FsDatasetSpi<?> real = new FsDatasetFactory().newInstance(datanode, storage, conf);
    Path delayFile = Paths.get(System.getProperty(DELAY_FILE_PROPERTY, "/nonexistent/delay"));
    InvocationHandler h =
        (proxy, method, args) -> {
          String name = method.getName();
          if (name.equals("getBlockInputStream") && servesFdRequest()) {
            long ms = delayMillis(delayFile);
            if (ms > 0) {
              TimeUnit.MILLISECONDS.sleep(ms);
            }
          }
          try {
            return method.invoke(real, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        };
    return (FsDatasetSpi<?>)
        Proxy.newProxyInstance(
            SlowDatasetFactory.class.getClassLoader(), new Class<?>[] {FsDatasetSpi.class}, h);
  }

  /**
   * Whether this call opens fds for op 87: a stock DataNode opens them in {@code
   * DataNode.requestShortCircuitFdsForRead} (TCP reads open the same stream from {@code
   * BlockSender}), the shim on its own threads.
   */
  private static boolean servesFdRequest() {
    if (Thread.currentThread().getName().startsWith("scr-shim")) {
      return true;
    }
    return StackWalker.getInstance()
        .walk(
            frames ->
                frames.anyMatch(
                    f ->
                        f.getMethodName().equals("requestShortCircuitFdsForRead")
                            && f.getClassName().equals(DataNode.class.getName())));
  }

  private static long delayMillis(Path file) throws IOException {
    try {
      String s = new String(Files.readAllBytes(file), StandardCharsets.US_ASCII).trim();
      return s.isEmpty() ? 0 : Long.parseLong(s);
    } catch (NoSuchFileException e) {
      return 0;
    }
  }
}
