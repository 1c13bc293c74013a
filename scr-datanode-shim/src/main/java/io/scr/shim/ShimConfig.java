package io.scr.shim;

import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;

/** The shim's settings, read once from the DataNode configuration through {@link ScrShimKeys}. */
final class ShimConfig {
  final String socketPathTemplate;
  final int backlog;
  final boolean skipPathValidation;

  /** The test-only trusted directory, or null. */
  final Path trustedSocketDir;

  final int ioThreads;
  final int workerThreads;
  final int workerQueue;
  final boolean fdRequestsOnEventLoop;
  final long fdRequestsLoopMaxMs;
  final long fdRequestsLoopBackoffMs;
  final int maxRequestBytes;

  /** Input a connection may buffer while its request is served ({@link ScrShimKeys}). */
  final int pendingInputLimit;

  final long receiptTimeoutMs;
  final long writeTimeoutMs;
  final long idleTimeoutMs;
  final int clientMaxConnections;
  final int clientMaxSegments;
  final int clientMaxSlots;
  final int uidMaxConnections;
  final int uidMaxSegments;
  final int uidMaxSlots;
  final int maxConnections;
  final long requestTimeoutMs;
  final int clientMaxPendingFds;
  final int uidMaxPendingFds;
  final int maxPendingFds;
  final long clientMaxPendingReplyBytes;
  final long invalidationIntervalMs;
  final boolean useMemfd;
  final Path shmDir;
  final boolean extensionsEnabled;

  private ShimConfig(Configuration c) {
    socketPathTemplate = string(c, ScrShimKeys.SOCKET_PATH);
    backlog = positiveInt(c, ScrShimKeys.SOCKET_BACKLOG);
    skipPathValidation = bool(c, ScrShimKeys.SOCKET_PATH_VALIDATION_SKIP_TEST_ONLY);
    String trusted = string(c, ScrShimKeys.SOCKET_PATH_TRUSTED_DIR_TEST_ONLY);
    trustedSocketDir = trusted.isEmpty() ? null : Paths.get(trusted).toAbsolutePath();
    ioThreads = positiveInt(c, ScrShimKeys.IO_THREADS);
    workerThreads = positiveInt(c, ScrShimKeys.WORKER_THREADS);
    workerQueue = positiveInt(c, ScrShimKeys.WORKER_QUEUE);
    fdRequestsOnEventLoop = bool(c, ScrShimKeys.FD_REQUESTS_ON_EVENT_LOOP);
    fdRequestsLoopMaxMs = positiveLong(c, ScrShimKeys.FD_REQUESTS_LOOP_MAX_MS);
    fdRequestsLoopBackoffMs = positiveLong(c, ScrShimKeys.FD_REQUESTS_LOOP_BACKOFF_MS);
    maxRequestBytes = positiveInt(c, ScrShimKeys.MAX_REQUEST_BYTES);
    pendingInputLimit = ScrShimKeys.pendingInputLimit(maxRequestBytes);
    receiptTimeoutMs = positiveLong(c, ScrShimKeys.RECEIPT_TIMEOUT_MS);
    writeTimeoutMs = positiveLong(c, ScrShimKeys.WRITE_TIMEOUT_MS);
    idleTimeoutMs = positiveLong(c, ScrShimKeys.IDLE_TIMEOUT_MS);
    clientMaxConnections = positiveInt(c, ScrShimKeys.CLIENT_MAX_CONNECTIONS);
    clientMaxSegments = positiveInt(c, ScrShimKeys.CLIENT_MAX_SEGMENTS);
    clientMaxSlots = positiveInt(c, ScrShimKeys.CLIENT_MAX_SLOTS);
    uidMaxConnections = positiveInt(c, ScrShimKeys.UID_MAX_CONNECTIONS);
    uidMaxSegments = positiveInt(c, ScrShimKeys.UID_MAX_SEGMENTS);
    uidMaxSlots = positiveInt(c, ScrShimKeys.UID_MAX_SLOTS);
    maxConnections = positiveInt(c, ScrShimKeys.MAX_CONNECTIONS);
    requestTimeoutMs = positiveLong(c, ScrShimKeys.REQUEST_TIMEOUT_MS);
    clientMaxPendingFds = positiveInt(c, ScrShimKeys.CLIENT_MAX_PENDING_FDS);
    uidMaxPendingFds = positiveInt(c, ScrShimKeys.UID_MAX_PENDING_FDS);
    maxPendingFds = positiveInt(c, ScrShimKeys.MAX_PENDING_FDS);
    clientMaxPendingReplyBytes = positiveLong(c, ScrShimKeys.CLIENT_MAX_PENDING_REPLY_BYTES);
    invalidationIntervalMs = positiveLong(c, ScrShimKeys.INVALIDATION_INTERVAL_MS);
    useMemfd = bool(c, ScrShimKeys.SHM_USE_MEMFD);
    shmDir = Paths.get(string(c, ScrShimKeys.SHM_DIR));
    extensionsEnabled = bool(c, ScrShimKeys.EXTENSIONS_ENABLED);
  }

  static ShimConfig from(Configuration conf) {
    return new ShimConfig(conf);
  }

  private static String string(Configuration c, ScrShimKeys.Key key) {
    return c.getTrimmed(key.name(), key.defaultValue());
  }

  private static boolean bool(Configuration c, ScrShimKeys.Key key) {
    String v = string(c, key);
    if (!"true".equalsIgnoreCase(v) && !"false".equalsIgnoreCase(v)) {
      throw new IllegalArgumentException(key.name() + " must be true or false, got '" + v + "'");
    }
    return Boolean.parseBoolean(v);
  }

  private static int positiveInt(Configuration c, ScrShimKeys.Key key) {
    long v = positiveLong(c, key);
    if (v > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(key.name() + " is too large: " + v);
    }
    return (int) v;
  }

  private static long positiveLong(Configuration c, ScrShimKeys.Key key) {
    String v = string(c, key);
    long parsed;
    try {
      parsed = Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key.name() + " must be a number, got '" + v + "'", e);
    }
    if (parsed <= 0) {
      throw new IllegalArgumentException(key.name() + " must be positive, got " + parsed);
    }
    return parsed;
  }
}
