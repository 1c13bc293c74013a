package io.scr.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.scr.core.internal.engine.Engine;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo.DatanodeInfoBuilder;
import org.junit.jupiter.api.Test;

/**
 * The public handle: every handle of a context shares its engine, and a handle's close gives back
 * exactly its own reference however often it is called, so one caller's double close never closes
 * the engine under another's reads.
 */
class ScrClientTest {
  private static Configuration conf() {
    Configuration c = new Configuration(false);
    c.set("scr.client.context", "scr-client-handles");
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    c.set("scr.client.socket.paths", "/nonexistent/scr-client-test/_PORT.sock");
    return c;
  }

  @Test
  void aHandlesCloseGivesBackItsOwnReferenceOnce() {
    Configuration conf = conf();
    ScrClient first = ScrClient.acquire(conf);
    ScrClient second = ScrClient.acquire(conf);
    Engine engine = Engine.running(conf);
    assertEquals("scr-client-handles", first.context());
    first.close();
    first.close(); // idempotent: the second handle's reference is not given back with it
    assertSame(engine, Engine.running(conf), "the other handle still holds the engine");
    assertEquals(0, second.metricsSnapshot().shortCircuitReads());
    second.close();
    assertThrows(IllegalStateException.class, () -> Engine.running(conf));
  }

  @Test
  void aDataNodeOnAnotherHostIsNotLocalAndTheReasonIsCounted() {
    try (ScrClient client = ScrClient.acquire(conf())) {
      DatanodeInfo remote =
          new DatanodeInfoBuilder()
              .setIpAddr("192.0.2.7")
              .setHostName("remote.example")
              .setDatanodeUuid("remote-dn")
              .setXferPort(9866)
              .build();
      long before = client.fallbackCount(FallbackReason.NOT_LOCAL);
      assertNull(client.socketPathFor(remote));
      assertEquals(before + 1, client.fallbackCount(FallbackReason.NOT_LOCAL));
    }
  }
}
