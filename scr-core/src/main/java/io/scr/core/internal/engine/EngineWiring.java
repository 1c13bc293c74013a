package io.scr.core.internal.engine;

import io.scr.cache.Ticker;
import io.scr.core.ScrKeys;
import io.scr.core.internal.health.DataNodeHealth;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.PathBackoff;
import io.scr.core.internal.read.MappedReads;
import io.scr.core.internal.read.MappingBudget;
import io.scr.core.internal.replica.ReplicaManager;
import io.scr.core.stats.ClientCounters;
import io.scr.core.stats.FailureClass;
import java.util.EnumMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * From one configuration to an engine's parts: reads the client keys through {@link ScrKeys},
 * checks the ones whose bad values would only show later (budgets, pool sizes), and builds the
 * backoff, the socket pool, the replica layer and the prefetch threads. {@link Engine}'s
 * constructor calls these in order, so a bad value fails before any socket, thread or fd exists.
 *
 * <p>Thread-safety: stateless; every method builds new objects from its arguments.
 */
final class EngineWiring {
  private EngineWiring() {}

  /**
   * Checks the replica cache's fd budget and the prefetch pool's sizes.
   *
   * @throws IllegalArgumentException naming the key, its value and the remedy
   */
  static void check(Configuration conf) {
    ScrKeys.CACHE_CAPACITY.get(conf::get); // a malformed number fails here too
    Long fdBudget = ScrKeys.CACHE_FD_BUDGET.get(conf::get);
    if (fdBudget != null && fdBudget < 2) {
      throw new IllegalArgumentException(
          ScrKeys.CACHE_FD_BUDGET.name()
              + "="
              + fdBudget
              + ": must be at least 2 (one replica holds two fds); unset it to derive the budget"
              + " from the process fd limit");
    }
    int prefetchThreads = ScrKeys.PREFETCH_THREADS.get(conf::get);
    int prefetchQueue = ScrKeys.PREFETCH_QUEUE_SIZE.get(conf::get);
    if (prefetchThreads < 1 || prefetchQueue < 1) {
      throw new IllegalArgumentException(
          ScrKeys.PREFETCH_THREADS.name()
              + "="
              + prefetchThreads
              + ", "
              + ScrKeys.PREFETCH_QUEUE_SIZE.name()
              + "="
              + prefetchQueue
              + ": both must be at least 1; turn prefetch off with "
              + ScrKeys.PREFETCH_MAX_BLOCKS.name()
              + "=0 instead");
    }
  }

  /** The per-path backoff: base seconds per failure class, and the cap. */
  static PathBackoff backoff(Configuration conf, Ticker ticker) {
    Map<FailureClass, Integer> base = new EnumMap<>(FailureClass.class);
    base.put(FailureClass.CONNECT, ScrKeys.BACKOFF_CONNECT_SECONDS.get(conf::get));
    base.put(FailureClass.UNSUPPORTED, ScrKeys.BACKOFF_UNSUPPORTED_SECONDS.get(conf::get));
    base.put(FailureClass.IO, ScrKeys.BACKOFF_IO_SECONDS.get(conf::get));
    base.put(FailureClass.SHM, ScrKeys.BACKOFF_SHM_SECONDS.get(conf::get));
    return new PathBackoff(ticker, base, ScrKeys.BACKOFF_MAX_SECONDS.get(conf::get));
  }

  /** The pool of connections to the DataNodes' sockets. */
  static DomainSocketPool socketPool(Configuration conf, DataNodeHealth health, Ticker ticker) {
    return DomainSocketPool.newBuilder()
        .deadlines(health.segmentDeadlines())
        .connectTimeoutMs(ScrKeys.NET_CONNECT_TIMEOUT_MS.get(conf::get))
        .readTimeoutMs(ScrKeys.netReadTimeoutMs(conf))
        .maxIdlePerPath(ScrKeys.NET_POOL_MAX_IDLE.get(conf::get))
        .idleExpiryMs(ScrKeys.NET_POOL_IDLE_EXPIRY_MS.get(conf::get))
        .ticker(ticker)
        .build();
  }

  /** The replica layer: cache, opener, slot pools, endpoints, read source. */
  static ReplicaManager replicaManager(
      Configuration conf,
      String context,
      DomainSocketPool pool,
      PathBackoff backoff,
      Ticker ticker,
      FallbackCounters fallbacks,
      ClientCounters counters,
      DataNodeHealth health,
      EngineSeams seams) {
    Integer capacity = ScrKeys.CACHE_CAPACITY.get(conf::get);
    Long fdBudget = ScrKeys.CACHE_FD_BUDGET.get(conf::get);
    return ReplicaManager.newBuilder(context, pool, backoff)
        .ticker(ticker)
        .capacity(capacity == null ? 0 : capacity)
        .fdBudget(fdBudget == null ? 0 : fdBudget)
        .idleExpiryMs(ScrKeys.CACHE_IDLE_EXPIRY_MS.get(conf::get))
        .staleThresholdMs(ScrKeys.replicaStaleThresholdMs(conf))
        .shmEnabled(ScrKeys.SHM_ENABLED.get(conf::get))
        .outliveDataNode(ScrKeys.REPLICA_OUTLIVE_DATANODE.get(conf::get))
        .extensionsEnabled(ScrKeys.EXTENSIONS_ENABLED.get(conf::get))
        .slotLowWatermark(ScrKeys.SLOT_POOL_LOW_WATERMARK.get(conf::get))
        .slotWaitMs(ScrKeys.SLOT_POOL_MAX_ALLOCATION_WAIT_MS.get(conf::get))
        .scratchBytes(ScrKeys.READ_SCRATCH_BYTES.get(conf::get))
        .mappedReads(mappedReads(conf))
        .clientName("scr_" + context + "_" + ProcessHandle.current().pid())
        .fallbacks(fallbacks)
        .counters(counters)
        .health(health)
        .afterMissChecked(seams::afterMissChecked)
        .build();
  }

  /** The threads that open replicas ahead of their first read (sizes checked by {@link #check}). */
  static PrefetchThreads prefetchThreads(Configuration conf, String context) {
    return new PrefetchThreads(
        context,
        ScrKeys.PREFETCH_THREADS.get(conf::get),
        ScrKeys.PREFETCH_QUEUE_SIZE.get(conf::get));
  }

  /** The mapped-read policy {@code conf} asks for, or null (off). */
  private static MappedReads mappedReads(Configuration conf) {
    if (!ScrKeys.READ_MAPPED_ENABLED.get(conf::get)) {
      return null;
    }
    int minReads = ScrKeys.READ_MAPPED_MIN_READS.get(conf::get);
    int maxMappings = ScrKeys.READ_MAPPED_MAX_MAPPINGS.get(conf::get);
    long maxBytes = ScrKeys.READ_MAPPED_MAX_MAPPED_BYTES.get(conf::get);
    if (minReads < 1 || maxMappings < 0 || maxBytes < 0) {
      throw new IllegalArgumentException(
          ScrKeys.READ_MAPPED_MIN_READS.name()
              + "="
              + minReads
              + ", "
              + ScrKeys.READ_MAPPED_MAX_MAPPINGS.name()
              + "="
              + maxMappings
              + ", "
              + ScrKeys.READ_MAPPED_MAX_MAPPED_BYTES.name()
              + "="
              + maxBytes
              + ": min-reads must be at least 1 and the limits not negative; turn mapped reads"
              + " off with "
              + ScrKeys.READ_MAPPED_ENABLED.name()
              + "=false instead");
    }
    return MappedReads.of(MappingBudget.of(maxMappings, maxBytes), minReads);
  }
}
