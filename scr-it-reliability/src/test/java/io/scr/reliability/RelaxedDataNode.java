package io.scr.reliability;

import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.net.unix.DomainSocket;

/**
 * A stock DataNode whose domain socket skips libhadoop's path check ({@code
 * DomainSocket.disableBindPathValidation()}, as the in-JVM test clusters do): {@link ProcessHdfs}
 * starts the local mode-A DataNode through it only when no directory it may use passes the socket
 * path rules, and says so.
 */
public final class RelaxedDataNode {
  private RelaxedDataNode() {}

  public static void main(String[] args) {
    DomainSocket.disableBindPathValidation();
    DataNode.main(args);
  }
}
