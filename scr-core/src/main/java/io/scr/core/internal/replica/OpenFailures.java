package io.scr.core.internal.replica;

import io.scr.core.FallbackReason;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.health.DataNodeUnhealthyException;
import io.scr.core.internal.net.DomainConnectException;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import io.scr.core.stats.FailureClass;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failed replica open means, decided once by the loading thread: a connect failure,
 * ERROR_UNSUPPORTED without version, or an I/O or protocol failure backs the path off ({@link
 * PathBackoff}, warned once per streak for connects); a wait of the whole health deadline does not
 * (the DataNode's health keeps new opens off the path until it answers again, and says so once); an
 * error for one block falls back for that block only; an invalid token or the reader's own
 * interrupt is rethrown and says nothing about the path; nothing is recorded while the engine
 * closes (its socket pool is gone under the request).
 *
 * <p>Thread-safety: thread-safe; the state is the backoff's.
 */
final class OpenFailures {
  private static final Logger LOG = LoggerFactory.getLogger(OpenFailures.class);

  private final PathBackoff backoff;
  private final BooleanSupplier closing;

  OpenFailures(PathBackoff backoff, BooleanSupplier closing) {
    this.backoff = backoff;
    this.closing = closing;
  }

  /** Records {@code e}, a failed request to the DataNode at {@code path}, in its backoff. */
  void classify(String path, Exception e) {
    if (closing.getAsBoolean()) {
      // The engine closed under this request (its socket pool is gone): not the path's fault.
      return;
    }
    if (DataNodeHealth.isTimeout(e) || e instanceof DataNodeUnhealthyException) {
      // The DataNode's health owns these (and logs once per transition): a backoff would keep
      // reads off the path after the DataNode answers again.
      return;
    }
    if (e instanceof DomainConnectException) {
      long nanos = backoff.recordFailure(path, FailureClass.CONNECT, e.getMessage());
      // A socket the client cannot reach is a configuration problem (no DataNode there, or a
      // directory this user may not traverse): say so once per streak, not on every retry, and
      // never fall back silently. The message carries the hint for the errno.
      if (backoff.firstWarningOfStreak(path, FailureClass.CONNECT)) {
        LOG.warn(
            "{}. Short-circuit reads from {} fall back to TCP, retried after {} s (backing off;"
                + " logged again only after a connect there succeeds)",
            e.getMessage(),
            path,
            TimeUnit.NANOSECONDS.toSeconds(nanos));
      }
    } else if (e instanceof ShortCircuitRefusedException) {
      FailureClass c = ((ShortCircuitRefusedException) e).failureClass();
      if (c != null) {
        long nanos = backoff.recordFailure(path, c, e.getMessage());
        LOG.warn(
            "{}; short-circuit reads from {} back off for {} s",
            e.getMessage(),
            path,
            TimeUnit.NANOSECONDS.toSeconds(nanos));
      }
    } else if (!(e instanceof InvalidToken)
        && !(e instanceof InterruptedIOException)
        // An interrupted reader (HBase interrupts its handlers) says nothing about the path.
        && !(e instanceof ClosedByInterruptException)) {
      long nanos = backoff.recordFailure(path, FailureClass.IO, e.toString());
      LOG.warn(
          "short-circuit request to {} failed ({}); backing off for {} s",
          path,
          e.toString(),
          TimeUnit.NANOSECONDS.toSeconds(nanos));
    }
  }

  /**
   * The fallback reason of a load that failed with {@code cause}; rethrows an invalid token and the
   * reading thread's interrupt instead.
   */
  static FallbackReason reasonOrRethrow(Throwable cause) throws IOException {
    if (cause instanceof InvalidToken) {
      throw (InvalidToken) cause;
    }
    if (DataNodeHealth.isTimeout(cause)) {
      LOG.debug("short-circuit open timed out: {}", cause.toString());
      return FallbackReason.DATANODE_TIMEOUT;
    }
    if (cause instanceof DataNodeUnhealthyException) {
      return ((DataNodeUnhealthyException) cause).timedOutHere()
          ? FallbackReason.DATANODE_TIMEOUT
          : FallbackReason.DATANODE_UNHEALTHY;
    }
    if (cause instanceof InterruptedIOException) {
      throw (InterruptedIOException) cause;
    }
    if (cause instanceof ClosedByInterruptException) {
      throw (ClosedByInterruptException) cause;
    }
    FallbackReason reason;
    if (cause instanceof DomainConnectException) {
      reason = FallbackReason.CONNECT_FAILED;
    } else if (cause instanceof ShortCircuitRefusedException) {
      reason =
          ((ShortCircuitRefusedException) cause).failureClass() == FailureClass.UNSUPPORTED
              ? FallbackReason.UNSUPPORTED
              : FallbackReason.BLOCK_REFUSED;
    } else {
      reason = FallbackReason.IO_ERROR;
    }
    LOG.debug("short-circuit open failed ({}): {}", reason, cause.toString());
    return reason;
  }
}
