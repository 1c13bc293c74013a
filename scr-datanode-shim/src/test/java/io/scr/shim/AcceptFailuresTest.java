package io.scr.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.unix.Errors;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * An accept that fails because the DataNode is at its open-file limit is counted and pauses
 * accepting (as Netty's acceptor would, so the loop does not spin on the pending connection); other
 * accept failures go on to Netty's acceptor untouched.
 */
class AcceptFailuresTest {
  private static final int EMFILE = 24;
  private static final int ECONNABORTED = 103;

  private final ShimMetrics metrics = new ShimMetrics();

  private EmbeddedChannel listener() {
    Epoll.ensureAvailability(); // Netty's errno strings come from its native library
    EmbeddedChannel ch = new EmbeddedChannel(new AcceptFailures(metrics, () -> 881, 4096));
    ch.freezeTime();
    return ch;
  }

  @Test
  void anAcceptAtTheFdLimitIsCountedAndPausesAcceptingForASecond() {
    EmbeddedChannel ch = listener();
    ch.pipeline().fireExceptionCaught(new Errors.NativeIoException("accept", -EMFILE));
    ch.checkException(); // handled here: nothing reaches the end of the pipeline
    assertEquals(1, metrics.rejections(ShimMetrics.Rejection.ACCEPT_FD_LIMIT));
    assertFalse(ch.config().isAutoRead(), "accepting paused");
    ch.advanceTimeBy(AcceptFailures.PAUSE_MS - 1, TimeUnit.MILLISECONDS);
    ch.runScheduledPendingTasks();
    assertFalse(ch.config().isAutoRead());
    ch.advanceTimeBy(1, TimeUnit.MILLISECONDS);
    ch.runScheduledPendingTasks();
    assertTrue(ch.config().isAutoRead(), "accepting again after the pause");
  }

  @Test
  void otherAcceptFailuresGoOnToNettysAcceptor() {
    EmbeddedChannel ch = listener();
    IOException aborted = new Errors.NativeIoException("accept", -ECONNABORTED);
    ch.pipeline().fireExceptionCaught(aborted);
    assertSame(aborted, assertThrows(IOException.class, ch::checkException));
    assertEquals(0, metrics.rejections(ShimMetrics.Rejection.ACCEPT_FD_LIMIT));
    assertTrue(ch.config().isAutoRead());
  }
}
