package io.scr.core;

import io.scr.cache.LeaseCacheStats;
import io.scr.core.internal.engine.Engine;
import io.scr.core.metrics.ClientSnapshot;
import io.scr.shm.SlotPoolStats;
import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * scr's short-circuit engine for one client context, for code that reads replicas itself rather
 * than through {@link io.scr.core.hdfs.ScrFileSystem} or {@link
 * io.scr.core.hdfs.ScrReplicaAccessorBuilder}: which socket reaches a DataNode, leases of open
 * replicas, and the engine's figures.
 *
 * <p>Every {@code ScrClient} of one context ({@code scr.client.context}, default {@code
 * dfs.client.context}) shares one engine with the two drop-ins of that context, as stock shares a
 * {@code ClientContext}: the engine is built by the first acquire from its configuration, and its
 * last {@link #close()} releases every fd, socket, segment and thread.
 *
 * <p>Thread-safety: thread-safe. {@link #close()} is idempotent: it gives back this handle's one
 * reference to the engine, once.
 */
public final class ScrClient implements Closeable {
  private final Engine engine;
  private final AtomicBoolean closed = new AtomicBoolean();

  private ScrClient(Engine engine) {
    this.engine = engine;
  }

  /**
   * A handle on the engine of {@code conf}'s client context, built on first acquire; later acquires
   * of the context share it (their configuration is not re-read; differing scr keys are logged
   * once). Close the handle when done.
   *
   * @throws IllegalArgumentException a key is out of range or names something that cannot exist;
   *     the message names the key and the fix
   */
  public static ScrClient acquire(Configuration conf) {
    return new ScrClient(Engine.acquire(conf));
  }

  /** The client context whose engine this is. */
  public String context() {
    return engine.context();
  }

  /**
   * The UNIX socket for short-circuit reads from this DataNode, or null when it is not on this
   * host, not configured, or backing off (the reason is counted: {@link #fallbackCount}).
   */
  public String socketPathFor(DatanodeInfo dn) {
    return engine.socketPathFor(dn);
  }

  /** As {@link #lease(ExtendedBlock, Token, String, String)}, naming no file in checksum errors. */
  public ReplicaLease lease(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath)
      throws IOException {
    return engine.lease(block, token, socketPath, null, null);
  }

  /**
   * Leases the replica of {@code block} from the DataNode at {@code socketPath}, opening it on a
   * cache miss, naming {@code fileName} (may be null) in checksum errors. Null when it cannot be
   * read locally right now (reason counted); the caller reads it the stock way.
   *
   * @throws org.apache.hadoop.security.token.SecretManager.InvalidToken so the caller can refetch
   *     the token
   */
  public ReplicaLease lease(
      ExtendedBlock block, Token<BlockTokenIdentifier> token, String socketPath, String fileName)
      throws IOException {
    return engine.lease(block, token, socketPath, fileName, null);
  }

  /**
   * As {@link #lease(ExtendedBlock, Token, String, String)}, reopening {@code reuse}, a closed
   * lease this engine returned earlier and that nothing else refers to any more, instead of
   * allocating one: a cache hit then allocates nothing, takes no lock and does no I/O.
   *
   * <pre>{@code
   * ReplicaLease lease = scr.lease(block, token, path, file, spare); // spare: per thread
   * if (lease != null) {
   *   spare = lease;
   *   try { ... lease.read(...) ... } finally { lease.close(); }
   * }
   * }</pre>
   *
   * @return the lease ({@code reuse} itself when given), or null (reason counted)
   * @throws IllegalArgumentException if {@code reuse} came from another engine
   * @throws IllegalStateException if {@code reuse} is still open
   */
  public ReplicaLease lease(
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      ReplicaLease reuse)
      throws IOException {
    return engine.lease(block, token, socketPath, fileName, reuse);
  }

  /** How often reads fell back to the stock path for {@code reason}. */
  public long fallbackCount(FallbackReason reason) {
    return engine.fallbackCount(reason);
  }

  /** The open-replica cache's counters. */
  public LeaseCacheStats cacheStats() {
    return engine.cacheStats();
  }

  /** The shared-memory slot pools' counters, one per DataNode socket. */
  public List<SlotPoolStats> slotPoolStats() {
    return engine.slotPoolStats();
  }

  /** Every figure the metrics publish, now (docs/metrics.md). */
  public ClientSnapshot metricsSnapshot() {
    return engine.metricsSnapshot();
  }

  /** Gives back this handle's reference to the engine; the last one closes it. Idempotent. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      engine.close();
    }
  }

  @Override
  public String toString() {
    return "ScrClient{" + engine + (closed.get() ? ", closed}" : "}");
  }
}
