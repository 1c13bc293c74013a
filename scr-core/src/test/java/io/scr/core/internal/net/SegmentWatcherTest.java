package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.Socket;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * The watcher notices when the DataNode closes a segment's connection (a restart, or the DataNode
 * dropping the segment), on a real UNIX socket, and calls back exactly once.
 */
class SegmentWatcherTest {
  @TempDir Path dir;

  @Test
  void peerClosingTheConnectionFiresTheCallbackOnce() throws Exception {
    File file = dir.resolve("dn.sock").toFile();
    DomainSocketPool pool = DomainSocketPool.newBuilder().build();
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance();
        SegmentWatcher watcher =
            new SegmentWatcher(
                r -> {
                  Thread t = new Thread(r, "test-segment-watcher");
                  t.setDaemon(true);
                  return t;
                })) {
      server.bind(AFUNIXSocketAddress.of(file));
      DomainConnection c = pool.connect(file.getPath());
      Socket accepted = server.accept();
      DomainConnection open = pool.connect(file.getPath());
      Socket keptOpen = server.accept();
      AtomicInteger openCalls = new AtomicInteger();
      watcher.watch(open, openCalls::incrementAndGet);
      CountDownLatch fired = new CountDownLatch(1);
      AtomicInteger calls = new AtomicInteger();
      watcher.watch(
          c,
          () -> {
            calls.incrementAndGet();
            fired.countDown();
          });
      accepted.close();
      assertTrue(fired.await(10, TimeUnit.SECONDS), "the watcher saw the close");
      c.close();
      watcher.close(); // joins the watcher thread: every callback it was going to make is made
      assertEquals(1, calls.get());
      assertEquals(0, openCalls.get(), "a connection the DataNode keeps open is not reported");
      open.close();
      keptOpen.close();
    } finally {
      pool.close();
    }
  }

  /**
   * An Error from a callback (an OutOfMemoryError, say) does not end the watcher: the next
   * disconnect is still seen. Before, the thread died and no segment was invalidated again.
   */
  @Test
  void anErrorInACallbackDoesNotStopTheWatcher() throws Exception {
    File file = dir.resolve("dn2.sock").toFile();
    DomainSocketPool pool = DomainSocketPool.newBuilder().build();
    try (AFUNIXServerSocket server = AFUNIXServerSocket.newInstance();
        SegmentWatcher watcher =
            new SegmentWatcher(
                r -> {
                  Thread t = new Thread(r, "test-segment-watcher-error");
                  t.setDaemon(true);
                  return t;
                })) {
      server.bind(AFUNIXSocketAddress.of(file));
      DomainConnection first = pool.connect(file.getPath());
      Socket firstPeer = server.accept();
      DomainConnection second = pool.connect(file.getPath());
      Socket secondPeer = server.accept();
      CountDownLatch threw = new CountDownLatch(1);
      watcher.watch(
          first,
          () -> {
            threw.countDown();
            throw new OutOfMemoryError("injected");
          });
      CountDownLatch fired = new CountDownLatch(1);
      watcher.watch(second, fired::countDown);
      firstPeer.close();
      assertTrue(threw.await(10, TimeUnit.SECONDS), "the first disconnect was seen");
      secondPeer.close();
      assertTrue(fired.await(10, TimeUnit.SECONDS), "the watcher outlived the Error");
      first.close();
      second.close();
    } finally {
      pool.close();
    }
  }
}
