package io.scr.shim;

import io.scr.shim.SegmentRegistry.BlockKey;
import java.io.IOException;
import java.lang.reflect.Field;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.InvalidRequestException;
import org.apache.hadoop.hdfs.ExtendedBlockId;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.Replica;
import org.apache.hadoop.hdfs.server.datanode.ShortCircuitRegistry;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.shortcircuit.ShortCircuitShm;
import org.apache.hadoop.net.unix.DomainSocket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the shim when the DataNode caches or uncaches a block (HDFS centralized caching), at the
 * moment it tells its own short-circuit registry: the DataNode's block cache reports every mlock
 * ({@code processBlockMlockEvent}, after the block is verified and before it is counted cached) and
 * asks before every munlock ({@code processBlockMunlockRequest}) through {@code
 * DataNode.getShortCircuitRegistry()}. Installed in that place, this registry forwards every call
 * to the DataNode's own {@link ShortCircuitRegistry} (which still serves stock clients' segments)
 * and adds the shim's slots: a cached block's slots become ANCHORABLE at once, also slots granted
 * before the block was cached, and an uncache is deferred while a shim client holds an anchor, as
 * stock does for its own slots. Without it the invalidation scan still makes ANCHORABLE follow the
 * cache, one scan interval late, and cannot defer a munlock.
 *
 * <p>Installed only on a DataNode that caches blocks ({@code dfs.datanode.max.locked.memory} > 0),
 * by replacing the DataNode's package-private {@code shortCircuitRegistry} field, and put back on
 * {@link #uninstall()}. Where that field cannot be replaced (another Hadoop), the plugin says so
 * once and keeps the scan.
 *
 * <p>Thread-safety: the forwarded calls are the delegate's; the shim's part is {@link
 * SegmentRegistry}'s. The field is written once by the plugin's control thread while the DataNode
 * runs: a caching thread that still sees the DataNode's own registry reaches only stock's slots,
 * and the scan catches the shim's up.
 */
final class BlockCacheEvents extends ShortCircuitRegistry {
  private static final Logger LOG = LoggerFactory.getLogger(BlockCacheEvents.class);
  private static final String FIELD = "shortCircuitRegistry";

  private final DataNode dn;
  private final ShortCircuitRegistry delegate;
  private final SegmentRegistry registry;
  private final ShimMetrics metrics;

  private BlockCacheEvents(
      DataNode dn, ShortCircuitRegistry delegate, SegmentRegistry registry, ShimMetrics metrics)
      throws IOException {
    super(inert());
    this.dn = dn;
    this.delegate = delegate;
    this.registry = registry;
    this.metrics = metrics;
  }

  /**
   * A configuration on which the base class's constructor gives up at its first check, before it
   * makes a shared-memory directory or a watcher thread: this object's own registry stays disabled
   * and unused, every call goes to the delegate.
   */
  private static Configuration inert() {
    Configuration c = new Configuration(false);
    c.setInt("dfs.short.circuit.shared.memory.watcher.interrupt.check.ms", 0);
    return c;
  }

  /**
   * Installs the events on {@code dn} when its dataset caches blocks; returns the installed object
   * (to {@link #uninstall()} on stop), or null when there is nothing to do or it could not be
   * installed (then said once in the log, with the consequence).
   */
  static BlockCacheEvents install(DataNode dn, SegmentRegistry registry, ShimMetrics metrics) {
    FsDatasetSpi<?> ds = dn.getFSDataset();
    if (ds == null || ds.getCacheCapacity() <= 0) {
      return null; // no block cache: nothing is ever anchorable
    }
    try {
      Field f = DataNode.class.getDeclaredField(FIELD);
      f.setAccessible(true);
      ShortCircuitRegistry current = (ShortCircuitRegistry) f.get(dn);
      if (current == null || current instanceof BlockCacheEvents) {
        throw new IllegalStateException("the DataNode's registry is " + current);
      }
      BlockCacheEvents events = new BlockCacheEvents(dn, current, registry, metrics);
      f.set(dn, events);
      return events;
    } catch (ReflectiveOperationException | RuntimeException | IOException e) {
      metrics.cacheEventsUnavailable = true;
      LOG.warn(
          "The scr shim cannot hear this DataNode's block cache events ({}): a block cached after a"
              + " client opened it becomes anchorable (checksum-free and zero-copy reads) one"
              + " invalidation scan later, and an uncache is not deferred while a shim client"
              + " holds an anchor",
          e.toString());
      return null;
    }
  }

  /** Puts the DataNode's own registry back, unless something else replaced this one since. */
  void uninstall() {
    try {
      Field f = DataNode.class.getDeclaredField(FIELD);
      f.setAccessible(true);
      if (f.get(dn) == this) {
        f.set(dn, delegate);
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.debug("Could not put the DataNode's short-circuit registry back", e);
    }
  }

  @Override
  public void processBlockMlockEvent(ExtendedBlockId blockId) {
    delegate.processBlockMlockEvent(blockId);
    try {
      BlockKey key = new BlockKey(blockId.getBlockPoolId(), blockId.getBlockId());
      registry.blockCached(key, replica(blockId));
    } catch (RuntimeException e) {
      // The DataNode's caching thread must not fail for the shim: the scan catches up.
      LOG.warn("scr shim: could not mark the slots of cached block {} anchorable", blockId, e);
    }
  }

  @Override
  public boolean processBlockMunlockRequest(ExtendedBlockId blockId) {
    boolean stockAllows = delegate.processBlockMunlockRequest(blockId);
    boolean shimAllows;
    try {
      shimAllows =
          registry.blockUncaching(new BlockKey(blockId.getBlockPoolId(), blockId.getBlockId()));
    } catch (RuntimeException e) {
      LOG.warn("scr shim: could not clear the anchorable slots of block {}", blockId, e);
      shimAllows = true; // the scan clears them; never hold the DataNode's cache on our failure
    }
    if (!shimAllows) {
      metrics.uncachesDeferred.increment();
    }
    return stockAllows && shimAllows;
  }

  @SuppressWarnings("deprecation") // getReplica: the non-copying replica map lookup
  private Replica replica(ExtendedBlockId blockId) {
    FsDatasetSpi<?> ds = dn.getFSDataset();
    return ds == null ? null : ds.getReplica(blockId.getBlockPoolId(), blockId.getBlockId());
  }

  // Everything else is the DataNode's own registry's.

  @Override
  public void removeShm(ShortCircuitShm shm) {
    delegate.removeShm(shm);
  }

  @Override
  public void processBlockInvalidation(ExtendedBlockId blockId) {
    delegate.processBlockInvalidation(blockId);
  }

  @Override
  public String getClientNames(ExtendedBlockId blockId) {
    return delegate.getClientNames(blockId);
  }

  @Override
  public NewShmInfo createNewMemorySegment(String clientName, DomainSocket sock)
      throws IOException {
    return delegate.createNewMemorySegment(clientName, sock);
  }

  @Override
  public void registerSlot(ExtendedBlockId blockId, ShortCircuitShm.SlotId slotId, boolean isCached)
      throws InvalidRequestException {
    delegate.registerSlot(blockId, slotId, isCached);
  }

  @Override
  public void unregisterSlot(ShortCircuitShm.SlotId slotId) throws InvalidRequestException {
    delegate.unregisterSlot(slotId);
  }

  @Override
  public void shutdown() {
    delegate.shutdown();
  }

  @Override
  public boolean visit(Visitor visitor) {
    return delegate.visit(visitor);
  }

  @Override
  public int getShmNum() {
    return delegate.getShmNum();
  }
}
