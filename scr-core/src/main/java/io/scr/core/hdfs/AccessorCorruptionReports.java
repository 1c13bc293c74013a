package io.scr.core.hdfs;

import io.scr.core.internal.engine.Engine;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.NameNodeProxiesClient;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.ipc.RPC;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports to the NameNode the corrupt replicas the replica accessor reads, as stock's block readers
 * get them reported.
 *
 * <p><b>Why the accessor reports itself.</b> Stock reports a checksum error against the DataNode
 * <em>it</em> chose for the read; the accessor is not told that DataNode, and serves the replica of
 * whichever local DataNode holds the block (the one it has open first). Passing the {@code
 * ChecksumException} on would let stock blame a DataNode whose replica may be good. So the accessor
 * hands stock a plain I/O error (stock then reads another location), and the corrupt replica, named
 * by the DataNode socket it came from, is reported here against that DataNode.
 *
 * <p><b>Stock's rule.</b> Stock reports what one read found unless every replica of a block failed
 * its checksum (then the client may be at fault, not the replicas). The accessor's findings are
 * held per block until the outcome is known: when another replica of the block verifies, through
 * the accessor, a chunk that failed in a corrupt one ({@link #servedGood}), or when the accessor
 * hands the block to the stock reader ({@link #handedToStock}) while some replica is not known
 * corrupt, the block's corrupt replicas are reported; when all its replicas are known corrupt, none
 * is (and stock, reading them itself, finds the same and reports none either).
 *
 * <p><b>Reporting.</b> Two NameNode calls on the reading thread, as stock reports on it: {@code
 * getBlockLocations} of the file, to map the replica's socket back to its DataNode ({@link
 * Engine#socketPathOf}) and to learn the block's replica count, then {@code reportBadBlocks}. The
 * NameNode is {@code fs.defaultFS}'s (the accessor is not told the file system either): a file of
 * another name space, or a default file system that is not HDFS, cannot be reported, and one WARN
 * per replica says so.
 *
 * <p>Thread-safety: thread-safe. Findings are a concurrent map of per-block sets, each guarded by
 * its own monitor; the decision for a block removes it from the map first, so each finding is
 * reported at most once.
 */
final class AccessorCorruptionReports {
  private static final Logger LOG = LoggerFactory.getLogger(ScrReplicaAccessorBuilder.class);

  /** Most blocks with findings held; more are decided at once (reported). */
  static final int MAX_BLOCKS = 1024;

  private final Map<String, Finding> pending = new ConcurrentHashMap<>();
  private final LongAdder reported = new LongAdder();
  private final LongAdder unreported = new LongAdder();

  /** The corrupt replicas of one block found through the accessor, not yet decided on. */
  private static final class Finding {
    final ExtendedBlock block;
    final String fileName;
    final Configuration conf;
    final Engine engine;

    /** Socket paths of the DataNodes whose replica failed its checksum. */
    final Set<String> socketPaths = new LinkedHashSet<>();

    /** Block offsets of the chunks that failed. */
    final Set<Long> badOffsets = new LinkedHashSet<>();

    Finding(ExtendedBlock block, String fileName, Configuration conf, Engine engine) {
      this.block = block;
      this.fileName = fileName;
      this.conf = conf;
      this.engine = engine;
    }
  }

  /**
   * The replica of {@code block} that the DataNode at {@code socketPath} served failed its
   * checksum. Held until the block's outcome is known (see the class comment).
   */
  void found(
      Configuration conf,
      Engine engine,
      String fileName,
      ExtendedBlock block,
      String socketPath,
      long badOffset) {
    if (pending.size() >= MAX_BLOCKS) {
      for (String k : new ArrayList<>(pending.keySet())) {
        decide(k, false);
      }
    }
    Finding f =
        pending.computeIfAbsent(key(block), k -> new Finding(block, fileName, conf, engine));
    synchronized (f) {
      f.socketPaths.add(socketPath);
      f.badOffsets.add(badOffset);
    }
  }

  /** Whether any block has findings not yet decided on (cheap; asked once per accessor built). */
  boolean any() {
    return !pending.isEmpty();
  }

  /** Whether {@code block} has findings not yet decided on. */
  boolean has(ExtendedBlock block) {
    return !pending.isEmpty() && pending.containsKey(key(block));
  }

  /**
   * A replica of {@code block} from another DataNode verified {@code length} bytes at block offset
   * {@code offset} through the accessor. When they cover a chunk that failed in a corrupt replica,
   * the corruption is that replica's, not the client's: the corrupt replicas found are reported,
   * and true returned. (A read of other chunks proves nothing: the replica may be corrupt there
   * too.)
   */
  boolean servedGood(ExtendedBlock block, long offset, int length) {
    String key = key(block);
    Finding f = pending.get(key);
    if (f == null) {
      return true; // decided already
    }
    boolean covers = false;
    synchronized (f) {
      for (long bad : f.badOffsets) {
        if (bad >= offset && bad < offset + length) {
          covers = true;
          break;
        }
      }
    }
    if (covers) {
      decide(key, true);
    }
    return covers;
  }

  /**
   * The accessor declined {@code block} and the stock reader reads it: the corrupt replicas found
   * are reported unless they are all the block's replicas.
   */
  void handedToStock(ExtendedBlock block) {
    decide(key(block), false);
  }

  /** Replicas reported to the NameNode. */
  long reportedCount() {
    return reported.sum();
  }

  /** Corrupt replicas that could not be reported (no NameNode knew them). */
  long unreportedCount() {
    return unreported.sum();
  }

  private void decide(String key, boolean goodReplicaRead) {
    Finding f = pending.remove(key);
    if (f == null) {
      return;
    }
    List<String> paths;
    synchronized (f) {
      paths = new ArrayList<>(f.socketPaths);
    }
    try {
      report(f, paths, goodReplicaRead);
    } catch (IOException | RuntimeException e) {
      unreported.add(paths.size());
      LOG.warn(
          "Could not report the corrupt replicas of {} in {} (DataNode sockets {}) to the NameNode"
              + " of {}: {}",
          f.block,
          f.fileName,
          paths,
          FileSystem.getDefaultUri(f.conf),
          e.toString());
    }
  }

  private void report(Finding f, List<String> paths, boolean goodReplicaRead) throws IOException {
    URI nameNode = FileSystem.getDefaultUri(f.conf);
    if (!"hdfs".equals(nameNode.getScheme())) {
      throw new IOException(
          "fs.defaultFS is "
              + nameNode
              + ", not an HDFS NameNode; the replica accessor reports to fs.defaultFS's NameNode");
    }
    ClientProtocol namenode =
        NameNodeProxiesClient.createProxyWithClientProtocol(f.conf, nameNode, new AtomicBoolean())
            .getProxy();
    try {
      LocatedBlocks blocks = namenode.getBlockLocations(f.fileName, 0, Long.MAX_VALUE);
      LocatedBlock lb = blocks == null ? null : find(blocks, f.block);
      if (lb == null) {
        throw new IOException("the NameNode lists no block " + f.block + " in " + f.fileName);
      }
      if (lb.getBlock().getGenerationStamp() != f.block.getGenerationStamp()) {
        LOG.info(
            "Corrupt replicas of {} not reported: the block is at generation stamp {} now",
            f.block,
            lb.getBlock().getGenerationStamp());
        return;
      }
      DatanodeInfo[] locations = lb.getLocations();
      List<DatanodeInfo> bad = new ArrayList<>();
      for (String path : paths) {
        DatanodeInfo dn = dataNodeAt(f.engine, locations, path);
        if (dn == null) {
          unreported.increment();
          LOG.warn(
              "Checksum error in the replica of {} served through {}, which is none of its"
                  + " locations {}: not reported to the NameNode",
              f.block,
              path,
              java.util.Arrays.toString(locations));
        } else {
          bad.add(dn);
        }
      }
      if (bad.isEmpty()) {
        return;
      }
      if (!goodReplicaRead && locations.length > 1 && bad.size() >= locations.length) {
        LOG.warn(
            "Every replica of {} in {} failed its checksum: not reported to the NameNode, as stock"
                + " reports none when all replicas are bad",
            f.block,
            f.fileName);
        return;
      }
      namenode.reportBadBlocks(
          new LocatedBlock[] {new LocatedBlock(lb.getBlock(), bad.toArray(new DatanodeInfo[0]))});
      reported.add(bad.size());
      LOG.warn(
          "Reported the corrupt replicas of {} in {} on {} to the NameNode",
          f.block,
          f.fileName,
          bad);
    } finally {
      RPC.stopProxy(namenode);
    }
  }

  private static LocatedBlock find(LocatedBlocks blocks, ExtendedBlock block) {
    for (LocatedBlock lb : blocks.getLocatedBlocks()) {
      ExtendedBlock b = lb.getBlock();
      if (b.getBlockId() == block.getBlockId()
          && b.getBlockPoolId().equals(block.getBlockPoolId())) {
        return lb;
      }
    }
    LocatedBlock last = blocks.getLastLocatedBlock();
    if (last != null && last.getBlock().getBlockId() == block.getBlockId()) {
      return last;
    }
    return null;
  }

  /** The one location whose local socket is {@code path}; null when none or several are. */
  private static DatanodeInfo dataNodeAt(Engine engine, DatanodeInfo[] locations, String path) {
    DatanodeInfo match = null;
    for (DatanodeInfo dn : locations) {
      if (path.equals(engine.socketPathOf(dn))) {
        if (match != null) {
          return null; // one socket path for several DataNodes: cannot tell which
        }
        match = dn;
      }
    }
    return match;
  }

  private static String key(ExtendedBlock block) {
    return block.getBlockPoolId() + ":" + block.getBlockId() + "_" + block.getGenerationStamp();
  }
}
