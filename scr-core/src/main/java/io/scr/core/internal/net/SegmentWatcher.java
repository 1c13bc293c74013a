package io.scr.core.internal.net;

import io.scr.shm.internal.FailureLog;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.Iterator;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.newsclub.net.unix.AFUNIXSelectorProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the connections that shared-memory segments are tied to, on one thread with a junixsocket
 * selector. The DataNode never writes to a segment's connection; when it becomes readable the
 * DataNode closed it (or died), so the segment's slots are invalid: the watcher calls the
 * registered callback once and stops watching. It never writes and never closes the connection
 * itself: its owner (the segment source) does, when the segment is returned.
 *
 * <p>Concurrency: {@link #watch} may be called from any thread; registrations are queued and
 * applied by the watcher thread (so registering never blocks on a selector that is selecting).
 * Callbacks run on the watcher thread and must not block. {@link #close()} stops the thread and
 * waits for it; idempotent.
 *
 * <p><b>The thread does not die.</b> Without it no segment is invalidated on a disconnect, for the
 * engine's whole life, so any failure of a pass (an {@code Error} such as {@code OutOfMemoryError}
 * included, from the selector or from a callback) is logged once per streak with its stack trace,
 * then at most once a minute, and the loop goes on after a pause (10 ms, doubling to 1 s). Only
 * {@link #close()} ends it.
 */
public final class SegmentWatcher implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentWatcher.class);

  private final Selector selector;
  private final Thread thread;
  private final ConcurrentLinkedQueue<Registration> pending = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Longest pause between two failing passes. */
  private static final long MAX_PAUSE = TimeUnit.SECONDS.toNanos(1);

  /** Opens the selector and starts the watcher thread. */
  public SegmentWatcher(ThreadFactory threadFactory) throws IOException {
    this.selector = AFUNIXSelectorProvider.provider().openSelector();
    this.thread = threadFactory.newThread(this::run);
    thread.start();
  }

  /**
   * Watches {@code connection}, which must not be used for anything else from now on (it is
   * switched to non-blocking). {@code onDisconnect} runs once when the peer closes it.
   */
  public void watch(DomainConnection connection, Runnable onDisconnect) throws IOException {
    if (closed.get()) {
      throw new IOException("segment watcher is closed");
    }
    SelectableChannel channel = connection.socket().getChannel();
    channel.configureBlocking(false);
    pending.add(new Registration(connection, channel, onDisconnect));
    selector.wakeup();
  }

  private void run() {
    ByteBuffer probe = ByteBuffer.allocate(1);
    FailureLog failures = new FailureLog();
    while (!closed.get()) {
      try {
        pass(probe);
        failures.succeeded(LOG, "segment watcher");
      } catch (ClosedSelectorException e) {
        if (!closed.get()) {
          LOG.error(
              "segment watcher stopped: its selector was closed; segments will not be"
                  + " invalidated on disconnect",
              e);
        }
        return;
      } catch (IOException | RuntimeException | Error e) {
        if (closed.get()) {
          return;
        }
        long pauseNanos = failures.failed(LOG, "segment watcher", e, System.nanoTime(), MAX_PAUSE);
        try {
          TimeUnit.NANOSECONDS.sleep(pauseNanos); // a broken selector must not spin a core
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** One pass: apply registrations, select, fire the callbacks of closed connections. */
  private void pass(ByteBuffer probe) throws IOException {
    Registration r;
    while ((r = pending.poll()) != null) {
      try {
        r.channel.register(selector, SelectionKey.OP_READ, r);
      } catch (IOException | RuntimeException e) {
        LOG.debug("segment connection {} closed before it was watched", r.connection, e);
        r.fire();
      }
    }
    selector.select();
    Iterator<SelectionKey> it = selector.selectedKeys().iterator();
    while (it.hasNext()) {
      SelectionKey key = it.next();
      it.remove();
      Registration reg = (Registration) key.attachment();
      if (!key.isValid() || key.isReadable()) {
        probe.clear();
        try {
          // Readable means closed: the DataNode never writes to a segment's connection. Do not
          // wait for -1: junixsocket's non-blocking read returns 0 at EOF, and the key is not
          // selected again, so waiting for -1 missed every disconnect (SegmentWatcherTest).
          int n = ((java.nio.channels.ReadableByteChannel) reg.channel).read(probe);
          if (n > 0) {
            LOG.warn("DataNode wrote to segment connection {}; treating as closed", reg.connection);
          }
        } catch (IOException e) {
          LOG.debug("segment connection {} failed", reg.connection, e);
        }
        key.cancel();
        reg.fire();
      }
    }
  }

  /** Stops the thread (no more callbacks) and closes the selector; idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    selector.wakeup();
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      selector.close();
    } catch (IOException e) {
      LOG.debug("closing the segment selector failed", e);
    }
  }

  private static final class Registration {
    final DomainConnection connection;
    final SelectableChannel channel;
    final Runnable onDisconnect;
    boolean fired;

    Registration(DomainConnection connection, SelectableChannel channel, Runnable onDisconnect) {
      this.connection = connection;
      this.channel = channel;
      this.onDisconnect = onDisconnect;
    }

    void fire() {
      if (!fired) {
        fired = true;
        try {
          onDisconnect.run();
        } catch (RuntimeException | Error e) { // the watcher must outlive any callback
          LOG.warn("segment disconnect callback failed for {}", connection, e);
        }
      }
    }
  }
}
