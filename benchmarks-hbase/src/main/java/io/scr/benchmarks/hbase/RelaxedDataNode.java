package io.scr.benchmarks.hbase;

import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.net.unix.DomainSocket;

/**
 * A stock DataNode whose domain socket skips libhadoop's path check ({@code
 * DomainSocket.disableBindPathValidation()}): the benchmark's socket directory lies in a shared
 * temporary directory, which the check rejects. Nothing else differs from {@code DataNode.main}.
 */
public final class RelaxedDataNode {
  private RelaxedDataNode() {}

  public static void main(String[] args) {
    DomainSocket.disableBindPathValidation();
    DataNode.main(args);
  }
}
