package io.scr.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.net.unix.DomainSocket;
import org.apache.hadoop.net.unix.DomainSocketWatcher;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The stock watcher's leak as a DataNode's shutdown causes it (see {@link StockDataNodeWatchers}):
 * a socket the watcher polls is closed under it, whose handler then fails when the dying thread
 * calls it a second time, as {@code ShortCircuitRegistry}'s does.
 */
class StockDataNodeWatchersTest {
  @BeforeAll
  static void libhadoop() {
    StockNative.requireAvailable();
  }

  @Test
  void aWatcherWhoseThreadDiedHasItsNotificationSocketClosed() throws Exception {
    // Created before the watcher: lower fds, so the dying thread's cleanup reaches the failing
    // handler before the watcher's own socket, as it did in CI.
    DomainSocket[] pair = DomainSocket.socketpair();
    DomainSocketWatcher watcher = new DomainSocketWatcher(60_000, "leak-test");
    AtomicInteger calls = new AtomicInteger();
    watcher.add(
        pair[1],
        sock -> {
          if (calls.incrementAndGet() > 1) {
            throw new IllegalStateException("failed to remove (handler called twice)");
          }
          return true;
        });
    pair[1].close(); // the DataNode's shutdown closing a socket the watcher still polls
    Thread thread = field(watcher, "watcherThread", Thread.class);
    thread.join(TimeUnit.SECONDS.toMillis(10));
    assertFalse(thread.isAlive(), "the watcher thread should have died on the closed socket");
    assertEquals(2, calls.get(), "the dying thread's cleanup runs the handler again");
    watcher.close(); // as ShortCircuitRegistry.shutdown() does: closes the other end only
    DomainSocket leaked = field(watcher, "notificationSockets", DomainSocket[].class)[1];
    assertTrue(leaked.isOpen(), "stock leaves its notification socket open");

    assertEquals(1, StockDataNodeWatchers.closeLeaked(watcher, "test"));

    assertFalse(leaked.isOpen());
    assertEquals(0, StockDataNodeWatchers.closeLeaked(watcher, "test"), "nothing left to close");
    pair[0].close();
  }

  @Test
  void aRunningWatcherIsLeftAlone() throws Exception {
    DomainSocketWatcher watcher = new DomainSocketWatcher(60_000, "running");
    try {
      assertEquals(0, StockDataNodeWatchers.closeLeaked(watcher, "test"));
      assertTrue(field(watcher, "notificationSockets", DomainSocket[].class)[1].isOpen());
    } finally {
      watcher.close();
    }
  }

  private static <T> T field(Object owner, String name, Class<T> type) throws Exception {
    Field f = owner.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return type.cast(f.get(owner));
  }
}
