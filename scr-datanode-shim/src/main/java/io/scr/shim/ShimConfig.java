package io.scr.shim;

import io.scr.config.ConfigKey;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;

/** The shim's settings, read once from the DataNode configuration through {@link ScrShimKeys}. */
final class ShimConfig {
  final String socketPathTemplate;
  final int backlog;
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

  private static String string(Configuration c, ConfigKey<String> key) {
    return key.get(c::get);
  }

  private static boolean bool(Configuration c, ConfigKey<Boolean> key) {
    return nonEmpty(c, key);
  }

  private static int positiveInt(Configuration c, ConfigKey<Integer> key) {
    int v = nonEmpty(c, key);
    if (v <= 0) {
      throw new IllegalArgumentException(key.name() + " must be positive, got " + v);
    }
    return v;
  }

  private static long positiveLong(Configuration c, ConfigKey<Long> key) {
    long v = nonEmpty(c, key);
    if (v <= 0) {
      throw new IllegalArgumentException(key.name() + " must be positive, got " + v);
    }
    return v;
  }

  /**
   * The key's value; a number or switch set to nothing is refused rather than read as its default,
   * so a DataNode never starts on a value its operator did not mean.
   */
  private static <T> T nonEmpty(Configuration c, ConfigKey<T> key) {
    String raw = c.getTrimmed(key.name());
    if (raw != null && raw.isEmpty()) {
      throw new IllegalArgumentException(
          key.name() + " is set to nothing: give it a " + key.type().getSimpleName());
    }
    return key.get(c::get);
  }
}
