package io.scr.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.metrics.ProcessFds;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** {@code scr.cache.fd.budget}: validated with a message naming the remedy, and it binds. */
class FdBudgetKeyTest {
  private static Configuration conf(String context) {
    Configuration c = new Configuration(false);
    c.set("scr.client.context", context);
    c.setBoolean("scr.metrics.enabled", false);
    c.setInt("scr.metrics.summary.interval.seconds", 0);
    return c;
  }

  @Test
  void aBudgetBelowOneReplicaIsRefusedNamingTheKey() {
    for (String bad : new String[] {"1", "0", "-5"}) {
      Configuration c = conf("fd-budget-bad-" + bad);
      c.set("scr.cache.fd.budget", bad);
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> ScrClient.acquire(c));
      assertTrue(e.getMessage().startsWith("scr.cache.fd.budget=" + bad + ": must be at least 2"));
      assertTrue(e.getMessage().contains("unset it"), e.getMessage());
    }
    Configuration c = conf("fd-budget-nan");
    c.set("scr.cache.fd.budget", "lots");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ScrClient.acquire(c));
    assertTrue(e.getMessage().contains("scr.cache.fd.budget"), e.getMessage());
  }

  @Test
  void anExplicitBudgetBindsAndHalvesTheCapacity() {
    Configuration c = conf("fd-budget-explicit");
    c.setLong("scr.cache.fd.budget", 10);
    try (ScrClient scr = ScrClient.acquire(c)) {
      LeaseCacheStats s = scr.cacheStats();
      assertEquals(10, s.fdBudget());
      assertEquals(5, s.capacity());
    }
  }

  @Test
  void unsetTheBudgetIsDerivedFromTheProcessFdLimit() {
    long limit = ProcessFds.softLimit();
    try (ScrClient scr = ScrClient.acquire(conf("fd-budget-derived"))) {
      if (limit > 0) {
        assertEquals(Math.max(limit / 2 - 1024, limit / 8), scr.cacheStats().fdBudget());
      }
    }
  }
}
