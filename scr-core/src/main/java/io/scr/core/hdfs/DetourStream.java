package io.scr.core.hdfs;

import io.scr.core.internal.engine.Engine;
import java.io.IOException;
import java.util.Collection;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.ScrDfsInputStreamBase;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * A stock {@code DFSInputStream} of one file whose every DataNode choice skips the local DataNodes
 * scr knows are unwell ({@link DataNodeSteering}), as a {@code ScrFileSystem} stream's stock reads
 * do: the bytes come from another replica over TCP, checksummed by stock's remote block reader, and
 * nothing waits for the unwell DataNode. Used by the replica accessor ({@link
 * UnwellDataNodeDetour}) for blocks whose local DataNode hangs; it adds no short-circuit read of
 * its own.
 *
 * <p>Thread-safety: as {@code DFSInputStream} (positional reads may run concurrently).
 */
final class DetourStream extends ScrDfsInputStreamBase {
  private final DataNodeSteering steering;

  DetourStream(
      DFSClient client, String src, boolean verifyChecksum, LocatedBlocks blocks, Engine scr)
      throws IOException {
    super(client, src, verifyChecksum, blocks);
    this.steering = new DataNodeSteering(scr, this::isDeadForStock);
  }

  @Override
  protected Collection<DatanodeInfo> nodesToSkip(
      LocatedBlock block, Collection<DatanodeInfo> ignoredNodes) {
    return steering.nodesToSkip(block, ignoredNodes);
  }
}
