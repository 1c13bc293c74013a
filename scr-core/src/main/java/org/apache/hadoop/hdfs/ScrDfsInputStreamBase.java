package org.apache.hadoop.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Collection;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * The smallest bridge scr needs into package {@code org.apache.hadoop.hdfs}: {@link DFSInputStream}
 * has only a package-private constructor, and a few {@link DFSClient} and {@link
 * DistributedFileSystem} members that {@code DistributedFileSystem.open} uses are package-private
 * too. {@code io.scr.core.hdfs.ScrFileSystem}'s stream extends this class so that {@code
 * HdfsDataInputStream} (which HBase checks with {@code instanceof} and asks for {@code
 * getReadStatistics()}) wraps a real {@code DFSInputStream}.
 *
 * <p>It adds no behaviour of its own: each member forwards to exactly one Hadoop member, named in
 * its javadoc (the override of stock's DataNode choice asks a hook, {@link #nodesToSkip}, which
 * changes nothing here; the public members serve scr's own parts of the stream and are not API).
 * The one exception is the visible length of the block being written: a length the subclass
 * measured from the local DataNode's memory takes the place of the one stock would ask a DataNode
 * for over TCP ({@link #openInfo}, {@link #extendLastBlock}), and lands in the same fields, through
 * the same stock method, as stock's own measurement. It lives in a split package, which works on
 * the class path (Hadoop is not run as named modules). Checked against Hadoop 3.3.6, 3.4.2 and
 * 3.5.0: one jar serves all three, the members whose signature or access differs between them
 * ({@code DFSClient.updateFileSystemReadStats}, the private {@code
 * DFSInputStream.setLocatedBlocksFields}) are bound once, when this class initializes.
 *
 * <p>Thread-safety: as {@link DFSInputStream}.
 */
public abstract class ScrDfsInputStreamBase extends DFSInputStream {
  /**
   * {@code DFSClient.updateFileSystemReadStats} as {@code (DFSClient, int distance, int bytes, long
   * readTimeMs)}: Hadoop 3.4 added the read-time argument, 3.3 has only {@code (int, int)} and gets
   * an adapter that drops it. Resolved once; a {@code static final} handle called with {@code
   * invokeExact} is a constant the JIT inlines, so a read pays no reflection.
   */
  private static final MethodHandle UPDATE_READ_STATS = bindUpdateReadStats();

  private static MethodHandle bindUpdateReadStats() {
    MethodHandles.Lookup lookup = MethodHandles.lookup();
    try {
      return lookup.findVirtual(
          DFSClient.class,
          "updateFileSystemReadStats",
          MethodType.methodType(void.class, int.class, int.class, long.class));
    } catch (NoSuchMethodException absentBefore34) {
      try {
        MethodHandle twoArgs =
            lookup.findVirtual(
                DFSClient.class,
                "updateFileSystemReadStats",
                MethodType.methodType(void.class, int.class, int.class));
        return MethodHandles.dropArguments(twoArgs, 3, long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(
            new IllegalStateException(
                "this Hadoop's DFSClient has neither updateFileSystemReadStats(int, int, long)"
                    + " (3.4+) nor updateFileSystemReadStats(int, int) (3.3): scr supports Hadoop"
                    + " 3.3 to 3.5 (docs/user-guide.md, supported versions)",
                e));
      }
    } catch (IllegalAccessException e) {
      throw new ExceptionInInitializerError(
          new IllegalStateException(
              "cannot reach the package-private DFSClient.updateFileSystemReadStats: scr-core and"
                  + " hadoop-hdfs-client must be loaded by the same class loader",
              e));
    }
  }

  /**
   * {@code DFSInputStream.setLocatedBlocksFields(LocatedBlocks, long)}, private in 3.3.6, 3.4 and
   * 3.5: what stock's {@code openInfo} does with a block list and the visible length it measured
   * for its block being written (the stream's block list, that length, the encryption info and the
   * refresh time). Null, with {@link #LOCAL_LENGTH_UNAVAILABLE} saying why, where this Hadoop has
   * no such member: streams then measure the stock way.
   */
  private static final MethodHandle SET_LOCATED_BLOCKS_FIELDS;

  /** Why {@link #SET_LOCATED_BLOCKS_FIELDS} is null; null when it is bound. */
  private static final String LOCAL_LENGTH_UNAVAILABLE;

  static {
    MethodHandle h = null;
    String why = null;
    try {
      h =
          MethodHandles.privateLookupIn(DFSInputStream.class, MethodHandles.lookup())
              .findVirtual(
                  DFSInputStream.class,
                  "setLocatedBlocksFields",
                  MethodType.methodType(void.class, LocatedBlocks.class, long.class));
    } catch (ReflectiveOperationException | SecurityException | IllegalArgumentException e) {
      why =
          "this Hadoop's DFSInputStream has no setLocatedBlocksFields(LocatedBlocks, long) ("
              + e
              + "): the visible length of a block being written is asked of a DataNode over TCP,"
              + " as stock does";
    }
    SET_LOCATED_BLOCKS_FIELDS = h;
    LOCAL_LENGTH_UNAVAILABLE = why;
  }

  /**
   * The visible length of the block being written that the stream under construction on this thread
   * measured before stock's constructor ran ({@link #openInfo} takes it), with the block list it
   * belongs to.
   */
  private static final ThreadLocal<MeasuredOnOpen> MEASURED_ON_OPEN = new ThreadLocal<>();

  private static final class MeasuredOnOpen {
    final LocatedBlocks blocks;
    final long visibleLength;

    MeasuredOnOpen(LocatedBlocks blocks, long visibleLength) {
      this.blocks = blocks;
      this.visibleLength = visibleLength;
    }
  }

  /** Forwards to {@code DFSInputStream(DFSClient, String, boolean, LocatedBlocks)}. */
  protected ScrDfsInputStreamBase(
      DFSClient client, String src, boolean verifyChecksum, LocatedBlocks locatedBlocks)
      throws IOException {
    this(client, src, verifyChecksum, locatedBlocks, -1);
  }

  /**
   * {@code DFSInputStream(DFSClient, String, boolean, LocatedBlocks)}, whose {@code openInfo} takes
   * {@code lastBlockVisibleLength} (when not negative) as the visible length of the block being
   * written instead of asking a DataNode for it over TCP ({@code getReplicaVisibleLength}).
   *
   * @param lastBlockVisibleLength the visible length of {@code locatedBlocks}' last block, which is
   *     not complete, as a DataNode holding it reported it just now; -1: measure it the stock way
   */
  protected ScrDfsInputStreamBase(
      DFSClient client,
      String src,
      boolean verifyChecksum,
      LocatedBlocks locatedBlocks,
      long lastBlockVisibleLength)
      throws IOException {
    super(client, src, verifyChecksum, measuredOnOpen(locatedBlocks, lastBlockVisibleLength));
  }

  private static LocatedBlocks measuredOnOpen(LocatedBlocks blocks, long visibleLength) {
    if (visibleLength >= 0
        && SET_LOCATED_BLOCKS_FIELDS != null
        && blocks != null
        && !blocks.isLastBlockComplete()
        && blocks.getLastLocatedBlock() != null) {
      MEASURED_ON_OPEN.set(new MeasuredOnOpen(blocks, visibleLength));
    } else {
      MEASURED_ON_OPEN.remove();
    }
    return blocks;
  }

  /**
   * Stock's {@code openInfo(boolean)}, except on construction with a visible length measured for
   * the block being written: that length is used as stock would use the one it asks a DataNode for
   * (the last block's {@code numBytes} and {@code setLocatedBlocksFields}), and no DataNode is
   * asked. A refresh ({@code refreshLocatedBlocks}) and every later call are stock's.
   */
  @Override
  void openInfo(boolean refreshLocatedBlocks) throws IOException {
    MeasuredOnOpen measured = MEASURED_ON_OPEN.get();
    MEASURED_ON_OPEN.remove();
    if (measured == null || refreshLocatedBlocks || measured.blocks != locatedBlocks) {
      super.openInfo(refreshLocatedBlocks);
      return;
    }
    synchronized (infoLock) {
      useVisibleLength(locatedBlocks, measured.visibleLength);
    }
  }

  /**
   * Raises the visible length of the stream's block being written to {@code visibleLength}, as a
   * DataNode holding {@code block} reported it just now, the way stock's {@code openInfo} sets the
   * length it measures; reads may then reach it (the stock ones too). Does nothing and returns
   * false unless the stream's last block is still the one being written, is {@code block} (same id
   * and generation stamp), and {@code visibleLength} is longer than the stream's.
   */
  protected final boolean extendLastBlock(ExtendedBlock block, long visibleLength) {
    if (SET_LOCATED_BLOCKS_FIELDS == null) {
      return false;
    }
    synchronized (infoLock) {
      LocatedBlocks blocks = locatedBlocks;
      LocatedBlock last = blocks.isLastBlockComplete() ? null : blocks.getLastLocatedBlock();
      if (last == null
          || last.getBlock().getBlockId() != block.getBlockId()
          || last.getBlock().getGenerationStamp() != block.getGenerationStamp()
          || visibleLength <= last.getBlockSize()) {
        return false;
      }
      useVisibleLength(blocks, visibleLength);
      return true;
    }
  }

  /** Why the visible length is measured the stock way in this JVM; null when it is not. */
  public static String localVisibleLengthUnavailable() {
    return LOCAL_LENGTH_UNAVAILABLE;
  }

  @GuardedBy("infoLock")
  private void useVisibleLength(LocatedBlocks blocks, long visibleLength) {
    blocks.getLastLocatedBlock().getBlock().setNumBytes(visibleLength);
    try {
      SET_LOCATED_BLOCKS_FIELDS.invokeExact((DFSInputStream) this, blocks, visibleLength);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      // setLocatedBlocksFields declares no checked exception.
      throw new IllegalStateException("DFSInputStream.setLocatedBlocksFields failed", e);
    }
  }

  /** {@code DFSClient.checkOpen()}: throws when the client (file system) has been closed. */
  protected final void checkClientOpen() throws IOException {
    dfsClient.checkOpen();
  }

  /**
   * {@code DFSClient.updateFileSystemReadStats(0, bytes, 0)} (3.4+) or {@code (0, bytes)} (3.3):
   * counts {@code bytes} read at network distance 0 in the file system's {@code
   * FileSystem.Statistics}, as stock block readers do.
   */
  protected final void countLocalFileSystemRead(int bytes) {
    try {
      UPDATE_READ_STATS.invokeExact(dfsClient, 0, bytes, 0L);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      // updateFileSystemReadStats declares no checked exception.
      throw new IllegalStateException("DFSClient.updateFileSystemReadStats failed", e);
    }
  }

  /**
   * Reports one corrupt replica the way stock reports what a read found: {@code
   * reportCheckSumFailure(CorruptedBlocks, int, boolean)} with {@code block} on {@code dataNode} as
   * the only entry, {@code locations} being how many replicas the block has. Stock's rule holds (it
   * reports unless every one of several replicas was found bad, which points at the client); the
   * NameNode then marks exactly that replica corrupt and re-replicates from a good one.
   */
  public final void reportCorrupt(ExtendedBlock block, DatanodeInfo dataNode, int locations) {
    DFSUtilClient.CorruptedBlocks corrupted = new DFSUtilClient.CorruptedBlocks();
    corrupted.addCorruptedBlock(block, dataNode);
    reportCheckSumFailure(corrupted, locations, false);
  }

  /**
   * {@code addToLocalDeadNodes(dataNode)}: keeps this stream's stock reads off {@code dataNode}
   * until its dead nodes are cleared (stock clears them when it refetches locations).
   */
  public final void keepStockOff(DatanodeInfo dataNode) {
    addToLocalDeadNodes(dataNode);
  }

  /** The stream's {@code locatedBlocks} field: its current block list, read without a lock. */
  public final LocatedBlocks locatedBlocks() {
    return locatedBlocks;
  }

  /** The stream's {@code infoLock}, which guards its block list. */
  public final Object infoLock() {
    return infoLock;
  }

  /** {@code getBlockAt(pos)}: fetches the located block at {@code pos} into the block list. */
  public final void loadBlockAt(long pos) throws IOException {
    getBlockAt(pos);
  }

  /**
   * {@code DFSInputStream.getBestNodeDNAddrPair(block, nodesToSkip(block, ignoredNodes))}: stock's
   * choice of the DataNode a stock read of {@code block} goes to, skipping what {@link
   * #nodesToSkip} adds (the same protected method, with the same signature, in 3.3.6, 3.4 and 3.5;
   * every stock read chooses through it: positional, hedged and stateful).
   */
  @Override
  protected DNAddrPair getBestNodeDNAddrPair(
      LocatedBlock block, Collection<DatanodeInfo> ignoredNodes) {
    return super.getBestNodeDNAddrPair(block, nodesToSkip(block, ignoredNodes));
  }

  /**
   * The DataNodes a stock read of {@code block} must not choose: {@code ignoredNodes} (may be null)
   * here; a subclass adds to a copy, never to the caller's collection.
   */
  protected Collection<DatanodeInfo> nodesToSkip(
      LocatedBlock block, Collection<DatanodeInfo> ignoredNodes) {
    return ignoredNodes;
  }

  /**
   * {@code DFSClient.getDeadNodes(this).containsKey(dn)}: whether stock's choice skips {@code dn}
   * already (this stream's dead nodes, and the shared detector's when it is enabled).
   */
  protected final boolean isDeadForStock(DatanodeInfo dn) {
    return dfsClient.getDeadNodes(this).containsKey(dn);
  }

  /** {@code DFSClient.checkOpen()} for a client that has no stream yet. */
  public static void checkOpen(DFSClient client) throws IOException {
    client.checkOpen();
  }

  /** {@code DistributedFileSystem.getPathName(Path)}: the checked HDFS path string of {@code p}. */
  public static String pathName(DistributedFileSystem fs, Path p) {
    return fs.getPathName(p);
  }
}
