package io.scr.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.metrics.ProcessFds;
import java.util.concurrent.TimeUnit;
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
          assertThrows(IllegalArgumentException.class, () -> Engine.acquire(c));
      assertTrue(e.getMessage().startsWith("scr.cache.fd.budget=" + bad + ": must be at least 2"));
      assertTrue(e.getMessage().contains("unset it"), e.getMessage());
    }
    Configuration c = conf("fd-budget-nan");
    c.set("scr.cache.fd.budget", "lots");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Engine.acquire(c));
    assertTrue(e.getMessage().contains("scr.cache.fd.budget"), e.getMessage());
  }

  @Test
  void anExplicitBudgetBindsAndHalvesTheCapacity() {
    Configuration c = conf("fd-budget-explicit");
    c.setLong("scr.cache.fd.budget", 10);
    try (Engine scr = Engine.acquire(c)) {
      LeaseCacheStats s = scr.cacheStats();
      assertEquals(10, s.fdBudget());
      assertEquals(5, s.capacity());
    }
  }

  @Test
  void theFdBudgetWarningIsLoggedOnceThenAtMostEveryFiveMinutes() {
    long[] now = {0};
    try (Engine scr = Engine.acquire(conf("fd-budget-warning"))) {
      FdBudgetWarning w = new FdBudgetWarning("test", () -> now[0], scr::cacheStats);
      assertTrue(w.fallback(), "the first fallback warns");
      for (int i = 0; i < 1000; i++) {
        now[0] += TimeUnit.MILLISECONDS.toNanos(100);
        assertFalse(w.fallback(), "fallback " + i + " within 5 minutes of the warning");
      }
      assertEquals(1000, w.suppressedSinceLastWarning());
      now[0] = FdBudgetWarning.INTERVAL_NANOS;
      assertTrue(w.fallback(), "5 minutes after the first warning, the next one");
      assertEquals(0, w.suppressedSinceLastWarning(), "the warning reports and resets the count");
      assertFalse(w.fallback());
    }
  }

  @Test
  void unsetTheBudgetIsDerivedFromTheProcessFdLimit() {
    long limit = ProcessFds.softLimit();
    try (Engine scr = Engine.acquire(conf("fd-budget-derived"))) {
      if (limit > 0) {
        assertEquals(Math.max(limit / 2 - 1024, limit / 8), scr.cacheStats().fdBudget());
      }
    }
  }
}
