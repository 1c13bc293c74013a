package io.scr.it.hbase;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.hdfs.ScrFileSystem;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.unix.DomainSocket;
import org.junit.jupiter.api.Test;

/**
 * In a JVM without libhadoop (this module's default test JVM), a ScrFileSystem configured with
 * {@code dfs.client.read.shortcircuit=true} (a shared /etc/hadoop/conf) must not let stock warn
 * "The short-circuit local reads feature cannot be used because libhadoop cannot be loaded" for
 * every client: stock's DomainSocketFactory warns exactly when its client's short-circuit setting
 * is on and DomainSocket cannot load, so the stock client inside must see it off.
 */
class ScrFileSystemWithoutLibhadoopTest {
  @Test
  void theStockClientInsideSeesShortCircuitOffSoStockDoesNotWarn() throws Exception {
    assertNotNull(DomainSocket.getLoadingFailureReason(), "this JVM must run without libhadoop");
    Configuration conf = new Configuration(false);
    conf.setBoolean("dfs.client.read.shortcircuit", true);
    conf.set("dfs.domain.socket.path", "/var/run/hdfs-sockets/dn._PORT");
    conf.set("scr.client.context", "no-libhadoop");
    conf.setBoolean("scr.metrics.enabled", false);
    try (ScrFileSystem fs = new ScrFileSystem()) {
      fs.initialize(URI.create("hdfs://localhost:1"), conf); // no RPC until the first call
      assertFalse(
          fs.getClient().getConf().getShortCircuitConf().isShortCircuitLocalReads(),
          "stock short-circuit on without libhadoop: stock warns on every client");
      assertTrue(conf.getBoolean("dfs.client.read.shortcircuit", false), "caller's conf untouched");
    }
  }
}
