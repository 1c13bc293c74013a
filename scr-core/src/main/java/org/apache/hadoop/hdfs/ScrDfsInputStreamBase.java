package org.apache.hadoop.hdfs;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
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
 * its javadoc. It lives in a split package, which works on the class path (Hadoop is not run as
 * named modules). Checked against Hadoop 3.4.2.
 *
 * <p>Thread-safety: as {@link DFSInputStream}.
 */
public abstract class ScrDfsInputStreamBase extends DFSInputStream {
  /** Forwards to {@code DFSInputStream(DFSClient, String, boolean, LocatedBlocks)}. */
  protected ScrDfsInputStreamBase(
      DFSClient client, String src, boolean verifyChecksum, LocatedBlocks locatedBlocks)
      throws IOException {
    super(client, src, verifyChecksum, locatedBlocks);
  }

  /** {@code DFSClient.checkOpen()}: throws when the client (file system) has been closed. */
  protected final void checkClientOpen() throws IOException {
    dfsClient.checkOpen();
  }

  /**
   * {@code DFSClient.updateFileSystemReadStats(0, bytes, 0)}: counts {@code bytes} read at network
   * distance 0 in the file system's {@code FileSystem.Statistics}, as stock block readers do.
   */
  protected final void countLocalFileSystemRead(int bytes) {
    dfsClient.updateFileSystemReadStats(0, bytes, 0);
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
