package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import java.net.URI;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ContentSummary;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;

/**
 * The cache size against the cluster: a host's DataNode holds about total blocks × replication /
 * DataNodes replicas (the rule the HBase "Short-Circuit Read Odyssey" authors sized their cache
 * by); a cache much smaller than that thrashes under random reads over all the data.
 */
final class ClusterSizingCheck implements Check {
  static final String ID = "cache-vs-cluster";

  @Override
  public String id() {
    return ID;
  }

  @Override
  public List<Finding> run(DoctorContext ctx) {
    URI uri = FileSystem.getDefaultUri(ctx.conf());
    if (!ctx.contactCluster() || !"hdfs".equals(uri.getScheme())) {
      return Collections.singletonList(
          Finding.warn(
              ID, "skipped: no NameNode to ask (fs.defaultFS=" + uri + ")", "run with --conf"));
    }
    Configuration c = new Configuration(ctx.conf());
    c.setInt("ipc.client.connect.max.retries", 0);
    c.setInt("ipc.client.connect.max.retries.on.timeouts", 0);
    c.setInt("ipc.client.connect.timeout", 5000);
    c.setInt(HdfsClientConfigKeys.Failover.MAX_ATTEMPTS_KEY, 0);
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    c.set("fs.hdfs.impl", DistributedFileSystem.class.getName());
    try (FileSystem fs = FileSystem.newInstance(uri, c)) {
      DistributedFileSystem dfs = (DistributedFileSystem) fs;
      ContentSummary cs = dfs.getContentSummary(new Path("/"));
      long blockSize = Math.max(1, dfs.getDefaultBlockSize(new Path("/")));
      long blocks = Math.max(cs.getFileCount(), (cs.getLength() + blockSize - 1) / blockSize);
      int replication = dfs.getDefaultReplication(new Path("/"));
      int dataNodes = dfs.getDataNodeStats(DatanodeReportType.LIVE).length;
      if (dataNodes == 0) {
        return Collections.singletonList(
            Finding.fail(ID, "the NameNode reports no live DataNodes", "start the DataNodes"));
      }
      long perHost = blocks * replication / dataNodes;
      long capacity = FdLimitCheck.capacity(ctx, Math.max(ctx.fdLimit(), 0));
      String figures =
          "about "
              + blocks
              + " blocks x replication "
              + replication
              + " / "
              + dataNodes
              + " DataNodes = ~"
              + perHost
              + " replicas per host; cache capacity "
              + capacity;
      if (capacity < perHost) {
        return Collections.singletonList(
            Finding.warn(
                ID,
                figures + ": random reads over all of it will thrash the cache",
                "raise "
                    + ScrKeys.CACHE_CAPACITY.name()
                    + " toward "
                    + perHost
                    + " (it needs "
                    + 2 * perHost
                    + " fds: ulimit -n >= "
                    + 2 * (2 * perHost + 1024)
                    + "), or accept misses if the hot set is smaller (watch CacheHitPercent)"));
      }
      return Collections.singletonList(Finding.ok(ID, figures));
    } catch (Exception e) {
      if (isAccessDenied(e)) {
        // Listing DataNodes (datanodeReport) is for the HDFS superuser only: a client user's normal
        // run meets this, so it is one line with the remedy, not the NameNode's stack trace.
        return Collections.singletonList(
            Finding.warn(
                ID,
                "skipped: the NameNode at "
                    + uri
                    + " lists DataNodes only to the HDFS superuser, and this user is not",
                "to size the cache against the cluster, run scr doctor as the HDFS superuser"
                    + " (e.g. sudo -u hdfs scr doctor); the other checks do not need it"));
      }
      return Collections.singletonList(
          Finding.warn(
              ID,
              "could not ask the NameNode at " + uri + ": " + firstLine(e),
              "run on a host with a working HDFS client configuration"));
    }
  }

  private static boolean isAccessDenied(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.apache.hadoop.security.AccessControlException
          || (t instanceof org.apache.hadoop.ipc.RemoteException
              && org.apache.hadoop.security.AccessControlException.class
                  .getName()
                  .equals(((org.apache.hadoop.ipc.RemoteException) t).getClassName()))) {
        return true;
      }
    }
    return false;
  }

  /** The exception's class and the first line of its message (remote ones carry stack traces). */
  static String firstLine(Throwable e) {
    String m = String.valueOf(e.getMessage());
    int nl = m.indexOf('\n');
    return e.getClass().getSimpleName() + ": " + (nl < 0 ? m : m.substring(0, nl));
  }
}
