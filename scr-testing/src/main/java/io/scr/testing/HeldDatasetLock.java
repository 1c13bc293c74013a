package io.scr.testing;

import java.lang.reflect.Method;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;

/**
 * A DataNode's block-pool dataset lock, held by a thread of its own until {@link #close()}: what
 * the DataNode answers from its replica map waits for it (its {@code getReplicaVisibleLength} RPC,
 * the shim's REPLICA_STATE), while the write pipeline, the socket's accept and the shim's PING go
 * on: a DataNode that hangs on one request and not on the others. Hadoop 3.4 and later lock per
 * block pool ({@code DataNodeLockManager}); 3.3 has one dataset lock; both are found by reflection
 * so this compiles against either.
 */
public final class HeldDatasetLock implements AutoCloseable {
  private final CountDownLatch held = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);
  private final Thread holder;
  private volatile Exception failure;

  /** Takes the write lock of {@code blockPoolId} on {@code dn}; returns once it is held. */
  public HeldDatasetLock(DataNode dn, String blockPoolId) throws Exception {
    holder =
        new Thread(
            () -> {
              try (AutoCloseable lock = writeLock(dn.getFSDataset(), blockPoolId)) {
                held.countDown();
                release.await();
              } catch (Exception e) {
                failure = e;
                held.countDown();
              }
            },
            "held-dataset-lock");
    holder.setDaemon(true);
    holder.start();
    held.await();
    if (failure != null) {
      throw failure;
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static AutoCloseable writeLock(Object dataset, String blockPoolId) throws Exception {
    Method manager;
    try {
      manager = FsDatasetSpi.class.getMethod("acquireDatasetLockManager");
    } catch (NoSuchMethodException hadoop33) {
      return (AutoCloseable) FsDatasetSpi.class.getMethod("acquireDatasetLock").invoke(dataset);
    }
    Object locks = manager.invoke(dataset);
    Class<? extends Enum> level =
        (Class<? extends Enum>)
            Class.forName("org.apache.hadoop.hdfs.server.common.DataNodeLockManager$LockLevel");
    Method writeLock = manager.getReturnType().getMethod("writeLock", level, String[].class);
    return (AutoCloseable)
        writeLock.invoke(locks, Enum.valueOf(level, "BLOCK_POOl"), new String[] {blockPoolId});
  }

  /** Releases the lock (its thread does) and waits for that thread to end. */
  @Override
  public void close() throws InterruptedException {
    release.countDown();
    holder.join(TimeUnit.SECONDS.toMillis(30));
  }
}
