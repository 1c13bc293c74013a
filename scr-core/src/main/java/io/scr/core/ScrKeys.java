package io.scr.core;

import io.scr.config.ConfigKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The one catalogue of configuration keys scr reads: every {@code scr.*} key and every stock Hadoop
 * key scr honours, with type, default and description. Code reads configuration only through these
 * entries; {@link #all()} enumerates them in catalogue order (for {@code docs/configuration.md} and
 * {@code scr doctor}).
 *
 * <p>Defaults work untuned. Durations are milliseconds unless the key says {@code seconds}.
 */
public final class ScrKeys {
  private static final List<ConfigKey<?>> ALL = new ArrayList<>();

  private ScrKeys() {}

  // ---- stock keys honoured ----

  /** Stock client switch for short-circuit reads. */
  public static final ConfigKey<Boolean> DFS_CLIENT_READ_SHORTCIRCUIT =
      stock(
          "dfs.client.read.shortcircuit",
          Boolean.class,
          false,
          "Stock switch for short-circuit reads. ScrFileSystem serves local reads only when it is"
              + " true. The replica accessor builder does not need it: listing"
              + " io.scr.core.hdfs.ScrReplicaAccessorBuilder in"
              + " dfs.client.replica.accessor.builder.classes is the opt-in, and leaving this"
              + " false keeps the stock local reader (and libhadoop) out of the way.");

  /** Stock DataNode socket path, {@code _PORT} resolved per DataNode. */
  public static final ConfigKey<String> DFS_DOMAIN_SOCKET_PATH =
      stock(
          "dfs.domain.socket.path",
          String.class,
          "",
          "UNIX socket of the local DataNode(s); _PORT is replaced by the DataNode's transfer"
              + " port. Used when scr.client.socket.paths is not set.");

  /** Stock client socket timeout; caps scr's read timeout when that is not set. */
  public static final ConfigKey<Integer> DFS_CLIENT_SOCKET_TIMEOUT =
      stock(
          "dfs.client.socket-timeout",
          Integer.class,
          60000,
          "Stock client socket timeout (ms). When scr.net.read.timeout.ms is unset, scr uses"
              + " min(this, 5000) for domain-socket reads.");

  /** The DataNode's transfer address; its port resolves _PORT when listing is not possible. */
  public static final ConfigKey<String> DFS_DATANODE_ADDRESS =
      stock(
          "dfs.datanode.address",
          String.class,
          "0.0.0.0:9866",
          "The DataNode's transfer address. scr reads its port to resolve _PORT in the socket"
              + " path when the socket directory cannot be listed (one DataNode per host).");

  /** Stock client context name; scr shares one engine per context. */
  public static final ConfigKey<String> DFS_CLIENT_CONTEXT =
      stock(
          "dfs.client.context",
          String.class,
          "default",
          "Stock client context name. scr shares one engine (cache, sockets, slots) among the"
              + " file systems of one context unless scr.client.context says otherwise.");

  /** Stock staleness of replicas opened without a shared-memory slot. */
  public static final ConfigKey<Long> DFS_REPLICA_STALE_THRESHOLD_MS =
      stock(
          "dfs.client.read.short.circuit.replica.stale.threshold.ms",
          Long.class,
          1800000L,
          "Stock age (ms) after which a replica opened without a shared-memory slot is reopened."
              + " Honoured when scr.replica.stale.threshold.ms is unset.");

  // ---- scr keys ----

  /** Engine sharing scope. */
  public static final ConfigKey<String> CLIENT_CONTEXT =
      scr(
          "scr.client.context",
          String.class,
          null,
          "Name of the shared scr engine. Unset: the value of dfs.client.context. File systems"
              + " with the same name share one cache, socket pool and slot pool.");

  /** Explicit socket list. */
  public static final ConfigKey<String> CLIENT_SOCKET_PATHS =
      scr(
          "scr.client.socket.paths",
          String.class,
          null,
          "Comma-separated UNIX socket paths of the DataNodes on this host (_PORT allowed and"
              + " resolved per DataNode). Unset: dfs.domain.socket.path.");

  /** Master switch. */
  public static final ConfigKey<Boolean> CLIENT_ENABLED =
      scr(
          "scr.client.enabled",
          Boolean.class,
          true,
          "Master switch for the scr data plane. False: every read takes the stock path.");

  /** Use of the scr shim's protocol extensions (op 127) with DataNodes that offer them. */
  public static final ConfigKey<Boolean> EXTENSIONS_ENABLED =
      scr(
          "scr.client.extensions.enabled",
          Boolean.class,
          true,
          "Ask each DataNode once (per socket path and DataNode start) whether it is an scr shim"
              + " offering protocol extensions, and if so release shared-memory slots in batches"
              + " (one round trip per batch instead of one per slot). The question is a release of"
              + " a slot no DataNode registers: a stock DataNode refuses it as it refuses any unknown"
              + " slot, and is then spoken to with the stock ops only. False: never ask, stock ops"
              + " only.");

  /** Connect timeout. */
  public static final ConfigKey<Integer> NET_CONNECT_TIMEOUT_MS =
      scr(
          "scr.net.connect.timeout.ms",
          Integer.class,
          1000,
          "Timeout (ms) for connecting to a DataNode's UNIX socket.");

  /** Read/write timeout. */
  public static final ConfigKey<Integer> NET_READ_TIMEOUT_MS =
      scr(
          "scr.net.read.timeout.ms",
          Integer.class,
          null,
          "Timeout (ms) for each read and write on a DataNode's UNIX socket. Unset:"
              + " min(dfs.client.socket-timeout, 5000).");

  /** Idle connections kept per path. */
  public static final ConfigKey<Integer> NET_POOL_MAX_IDLE =
      scr(
          "scr.net.pool.max.idle.per.path",
          Integer.class,
          8,
          "Idle domain-socket connections kept per DataNode socket path for fd requests and"
              + " releases. Extra connections are closed on return.");

  /** Idle expiry of pooled connections. */
  public static final ConfigKey<Long> NET_POOL_IDLE_EXPIRY_MS =
      scr(
          "scr.net.pool.idle.expiry.ms",
          Long.class,
          3000L,
          "Pooled connections idle longer than this (ms) are closed instead of reused. Keep it"
              + " below the DataNode's dfs.datanode.socket.reuse.keepalive (4000 ms), after which"
              + " the DataNode closes its side.");

  /** Backoff after a connect failure. */
  public static final ConfigKey<Integer> BACKOFF_CONNECT_SECONDS =
      scr(
          "scr.backoff.connect.seconds",
          Integer.class,
          2,
          "Seconds a socket path is skipped after a connect failure (no DataNode listening, path"
              + " missing, permission denied). Doubles on each consecutive failure up to"
              + " scr.backoff.max.seconds.");

  /** Backoff after ERROR_UNSUPPORTED without version. */
  public static final ConfigKey<Integer> BACKOFF_UNSUPPORTED_SECONDS =
      scr(
          "scr.backoff.unsupported.seconds",
          Integer.class,
          10,
          "Seconds a socket path is skipped after the DataNode answers that it does not pass file"
              + " descriptors (ERROR_UNSUPPORTED). Stock uses"
              + " dfs.domain.socket.disable.interval.seconds (600).");

  /** Backoff after an I/O or protocol failure. */
  public static final ConfigKey<Integer> BACKOFF_IO_SECONDS =
      scr(
          "scr.backoff.io.seconds",
          Integer.class,
          2,
          "Seconds a socket path is skipped after an I/O or protocol failure on a fresh"
              + " connection (timeout, reset, malformed reply, missing fds).");

  /** Backoff of the shared-memory request. */
  public static final ConfigKey<Integer> BACKOFF_SHM_SECONDS =
      scr(
          "scr.backoff.shm.seconds",
          Integer.class,
          60,
          "Seconds scr reads without shared-memory slots (time-based staleness) after the"
              + " DataNode refused or failed a shared-memory request.");

  /** Cap for exponential backoff. */
  public static final ConfigKey<Integer> BACKOFF_MAX_SECONDS =
      scr(
          "scr.backoff.max.seconds",
          Integer.class,
          60,
          "Upper bound (seconds) of any backoff after consecutive failures.");

  // ---- the local DataNode's health ----

  /** Health: the shortest deadline. */
  public static final ConfigKey<Long> HEALTH_DEADLINE_MIN_MS =
      scr(
          "scr.client.health.deadline.min.ms",
          Long.class,
          200L,
          "Shortest time (ms) a replica open waits for the local DataNode's answer (connect and"
              + " each read of the exchange). The deadline is scr.client.health.deadline.multiplier"
              + " times the 99th percentile of the DataNode's recent normal answer times, no less"
              + " than this and no more than scr.client.health.deadline.max.ms; it is this until the"
              + " DataNode has answered 8 requests. An answer slower than this is not a normal one:"
              + " it does not raise the deadline and makes the DataNode suspect, so a DataNode that"
              + " is slow (not hung) is read around instead of waited for. A DataNode that lets the deadline pass is suspect"
              + " (two in a row: unresponsive): replicas not open yet are read from other DataNodes"
              + " until it answers a probe and then one request, sent from the probe thread rather"
              + " than a reader's, within this time. Process-wide: the first client context that"
              + " talks to a DataNode sets the health keys.");

  /** Health: the longest deadline. */
  public static final ConfigKey<Long> HEALTH_DEADLINE_MAX_MS =
      scr(
          "scr.client.health.deadline.max.ms",
          Long.class,
          500L,
          "Longest deadline (ms) of the local DataNode's answer, however slow its normal answers:"
              + " how long a probe or a request sent off the read path waits before the DataNode"
              + " is judged unresponsive. Reads wait no more than"
              + " scr.client.health.read.wait.max.ms of it.");

  /** Health: how long a reader waits for the local DataNode before it reads another replica. */
  public static final ConfigKey<Long> HEALTH_READ_WAIT_MAX_MS =
      scr(
          "scr.client.health.read.wait.max.ms",
          Long.class,
          500L,
          "Longest time (ms) a read waits for the local DataNode's answer to a replica open (connect"
              + " and each read of the exchange) before it reads another replica: the deadline,"
              + " but no more than this. A request that outlasts this without reaching the deadline"
              + " changes no health state: one probe bounded by the whole deadline checks the"
              + " DataNode, and replicas not open yet are read from other DataNodes while it runs;"
              + " answered, the outwaited request is sent again from the probe thread and opens"
              + " resume once it is answered within the minimum; unanswered, the DataNode is"
              + " suspect as after a wait of the whole deadline. A first read of a block whose"
              + " DataNode hangs costs at most this plus a stock read of another replica. The"
              + " default, the default maximum deadline, keeps reads waiting the whole deadline;"
              + " 100 makes a hung DataNode cost a first read about 100 ms.");

  /** Health: the deadline as a multiple of the answer time. */
  public static final ConfigKey<Integer> HEALTH_DEADLINE_MULTIPLIER =
      scr(
          "scr.client.health.deadline.multiplier",
          Integer.class,
          10,
          "The deadline of a replica open is this many times the 99th percentile of the local"
              + " DataNode's last 64 normal answer times (those faster than the minimum), within the"
              + " minimum and maximum.");

  /** Health: how often a DataNode that is not healthy is probed. */
  public static final ConfigKey<Long> HEALTH_PROBE_INTERVAL_MS =
      scr(
          "scr.client.health.probe.interval.ms",
          Long.class,
          100L,
          "While a DataNode is suspect, unresponsive or dead, one probe every this many ms (the"
              + " shim's PING, or a stock op 88 for a slot no DataNode has) tells when it answers"
              + " again; an unanswered probe keeps waiting on its connection, so the answer is seen"
              + " as soon as the DataNode resumes. No probe, and no thread, while every DataNode"
              + " is healthy.");

  /** Cache capacity. */
  public static final ConfigKey<Integer> CACHE_CAPACITY =
      scr(
          "scr.cache.capacity",
          Integer.class,
          null,
          "Maximum open replicas cached. Unset: sized from the process fd limit (RLIMIT_NOFILE):"
              + " half of it minus 1024, two fds per replica.");

  /** Cache fd budget. */
  public static final ConfigKey<Long> CACHE_FD_BUDGET =
      scr(
          "scr.cache.fd.budget",
          Long.class,
          null,
          "Most fds the open-replica cache may hold (a replica holds one or two), a hard limit:"
              + " when the replicas in use fill it, a read of another block falls back to the"
              + " stock path (fallback reason FD_BUDGET; one WARN, then at most one every 5"
              + " minutes). Unset: from the process fd limit (RLIMIT_NOFILE soft limit L, which"
              + " the JVM raises to the hard limit at start-up), max(L / 2 - 1024, L / 8). Capped"
              + " at L. Without scr.cache.capacity the capacity is half the budget.");

  /** Cache idle expiry. */
  public static final ConfigKey<Long> CACHE_IDLE_EXPIRY_MS =
      scr(
          "scr.cache.idle.expiry.ms",
          Long.class,
          300000L,
          "An open replica nobody has read for this long (ms) is closed.");

  /** No-slot staleness. */
  public static final ConfigKey<Long> REPLICA_STALE_THRESHOLD_MS =
      scr(
          "scr.replica.stale.threshold.ms",
          Long.class,
          null,
          "Age (ms) after which a replica opened without a shared-memory slot is reopened."
              + " Unset: dfs.client.read.short.circuit.replica.stale.threshold.ms if set,"
              + " else 300000. Replicas with a slot go stale when the DataNode clears the slot.");

  /** Open replicas keep reading while their DataNode process is away. */
  public static final ConfigKey<Boolean> REPLICA_OUTLIVE_DATANODE =
      scr(
          "scr.replica.outlive.datanode",
          Boolean.class,
          true,
          "Open finalized replicas keep reading short-circuit from their fds (checksums verified)"
              + " while their DataNode process is dead or restarting, for at most"
              + " scr.replica.stale.threshold.ms, and are re-validated (same files, new slot) when a"
              + " DataNode is back on the socket. A replica the DataNode invalidated on its own"
              + " (deleted, moved) is not read on. false: every open replica is dropped when its"
              + " DataNode's shared memory goes (see docs/reliability.md).");

  /** Shared memory switch. */
  public static final ConfigKey<Boolean> SHM_ENABLED =
      scr(
          "scr.shm.enabled",
          Boolean.class,
          true,
          "Request shared-memory slots from the DataNode so it can tell the client when a"
              + " replica is deleted or moved, and allow checksum skipping for cached blocks.");

  /** Slot pool low watermark (key shared with scr-shm's {@code SlotPool}). */
  public static final ConfigKey<Integer> SLOT_POOL_LOW_WATERMARK =
      scr(
          "scr.client.slot-pool.low-watermark",
          Integer.class,
          64,
          "Free slots the pool keeps ready per DataNode; below it a new shared-memory segment is"
              + " requested in the background.");

  /** Slot pool wait (key shared with scr-shm's {@code SlotPool}). */
  public static final ConfigKey<Long> SLOT_POOL_MAX_ALLOCATION_WAIT_MS =
      scr(
          "scr.client.slot-pool.max-allocation-wait",
          Long.class,
          50L,
          "How long (ms) a replica open waits for a free slot when the pool is empty before it"
              + " goes on without one (time-based staleness for that replica).");

  /** Per-thread scratch size. */
  public static final ConfigKey<Integer> READ_SCRATCH_BYTES =
      scr(
          "scr.read.scratch.bytes",
          Integer.class,
          65536,
          "Size of the per-thread scratch buffer used when a checksummed read does not start and"
              + " end on checksum-chunk boundaries. Larger unaligned reads are served in pieces.");

  /** Metrics2 source switch. */
  public static final ConfigKey<Boolean> METRICS_ENABLED =
      scr(
          "scr.metrics.enabled",
          Boolean.class,
          true,
          "Publish the client's metrics through Hadoop metrics2 (source ScrClient-<context>; JMX"
              + " Hadoop:service=<prefix>,name=ScrClient-<context>). See docs/metrics.md.");

  /** Summary line interval. */
  public static final ConfigKey<Integer> METRICS_SUMMARY_INTERVAL_SECONDS =
      scr(
          "scr.metrics.summary.interval.seconds",
          Integer.class,
          60,
          "Every this many seconds, log one INFO line (logger io.scr.summary) with the cache hit"
              + " rate, evictions, fds against the limit, short-circuit throughput and fallbacks"
              + " over the interval. 0 turns it off.");

  // -------------------------------------------------- zero-copy reads

  /** Zero-copy mapping budget: count. */
  public static final ConfigKey<Integer> ZERO_COPY_MAX_MAPPINGS =
      scr(
          "scr.client.zero-copy.max-mappings",
          Integer.class,
          256,
          "At most this many block files are mapped at once for zero-copy reads"
              + " (read(ByteBufferPool, int, EnumSet) on a ScrFileSystem stream), per file system;"
              + " a mapping lives as long as its cached replica. Beyond it a zero-copy read copies"
              + " through the caller's pool, as stock does when it cannot map. 0 turns zero-copy"
              + " mapping off. Stock's dfs.client.mmap.enabled=false turns it off too.");

  /** Zero-copy mapping budget: bytes. */
  public static final ConfigKey<Long> ZERO_COPY_MAX_MAPPED_BYTES =
      scr(
          "scr.client.zero-copy.max-mapped-bytes",
          Long.class,
          32L << 30,
          "At most this many bytes of block files (address space, not memory: pages are the"
              + " page cache's) are mapped at once for zero-copy reads, per file system. Beyond it"
              + " a zero-copy read copies through the caller's pool.");

  // ---- prefetch on open ----

  /** Prefetch on open: blocks per file. */
  public static final ConfigKey<Integer> PREFETCH_MAX_BLOCKS =
      scr(
          "scr.client.prefetch.max-blocks",
          Integer.class,
          16,
          "When a ScrFileSystem stream opens a file, the replicas of up to this many of its local,"
              + " finalized blocks (in file order, among the blocks the NameNode listed on open) are"
              + " opened ahead, one after another on one of the engine's prefetch threads (one"
              + " pooled connection), so the first read of each is a cache hit. A read never waits"
              + " behind other blocks: it opens a block whose turn has not come itself, and shares"
              + " the open of the block in flight (one fd request between them, also when the"
              + " DataNode refuses it). Never delays open(); skipped (counted in PrefetchSkipped)"
              + " when the queue is full, the replica cache is full or holds half its fd budget or"
              + " more, or the stream closed first; a reader that finds the prefetch opening its"
              + " block twice in a row (a scan) opens the rest itself. Per file system. 0 turns"
              + " prefetch off.");

  /** Prefetch on open: threads per engine. */
  public static final ConfigKey<Integer> PREFETCH_THREADS =
      scr(
          "scr.client.prefetch.threads",
          Integer.class,
          2,
          "Daemon threads (scr-prefetch-<context>-N) that open replicas ahead for"
              + " scr.client.prefetch.max-blocks, per client context; started on first use and"
              + " stopped after 30 s idle. Several threads keep several op-87 exchanges in flight.");

  /** Prefetch on open: queue bound per engine. */
  public static final ConfigKey<Integer> PREFETCH_QUEUE_SIZE =
      scr(
          "scr.client.prefetch.queue-size",
          Integer.class,
          256,
          "At most this many replica opens wait for a prefetch thread, per client context; a"
              + " block that finds the queue full is not prefetched (counted in PrefetchSkipped)"
              + " rather than delaying open().");

  // ---- mapped reads: a pread that makes no syscall ----

  /** Mapped reads: the switch. */
  public static final ConfigKey<Boolean> READ_MAPPED_ENABLED =
      scr(
          "scr.client.read.mapped.enabled",
          Boolean.class,
          false,
          "Serve reads of hot local replicas (positional and stateful) by copying from a mapping"
              + " of the block file instead of a pread: no syscall per read, the covering checksum"
              + " chunks verified over the copy as before. RISK, why it is off: a block file"
              + " truncated under a reader (block recovery, an in-place truncate) or a disk read"
              + " error faults the mapping (SIGBUS), which the JVM raises as an asynchronous"
              + " java.lang.InternalError in the reading thread, possibly after the read returned,"
              + " where no fallback can catch it; a pread would have failed with an IOException."
              + " Turn it on for read-mostly data on healthy disks whose files are not truncated"
              + " (HBase HFiles, Parquet/ORC scans). See docs/operations.md.");

  /** Mapped reads: the hotness rule. */
  public static final ConfigKey<Integer> READ_MAPPED_MIN_READS =
      scr(
          "scr.client.read.mapped.min-reads",
          Integer.class,
          4,
          "With scr.client.read.mapped.enabled, a cached replica's block file is mapped on its"
              + " this-many-th read (1: the first), and read from the mapping from then on; a block"
              + " file mapped already for zero-copy reads is read from that mapping at once. At"
              + " least 1.");

  /** Mapped reads: mapping budget, count. */
  public static final ConfigKey<Integer> READ_MAPPED_MAX_MAPPINGS =
      scr(
          "scr.client.read.mapped.max-mappings",
          Integer.class,
          1024,
          "At most this many block files are mapped at once for mapped reads, per client context"
              + " (each is one kernel memory area; vm.max_map_count bounds them for the process); a"
              + " mapping lives as long as its cached replica. Beyond it a hot replica is read by"
              + " pread, counted in MappedReadFallbacks and logged once.");

  /** Mapped reads: mapping budget, bytes. */
  public static final ConfigKey<Long> READ_MAPPED_MAX_MAPPED_BYTES =
      scr(
          "scr.client.read.mapped.max-mapped-bytes",
          Long.class,
          128L << 30,
          "At most this many bytes of block files (address space, not memory: the pages are the"
              + " page cache's) are mapped at once for mapped reads, per client context. Beyond it"
              + " a hot replica is read by pread, counted in MappedReadFallbacks.");

  /** All keys, stock ones first, in catalogue order. */
  public static List<ConfigKey<?>> all() {
    return Collections.unmodifiableList(ALL);
  }

  private static <T> ConfigKey<T> stock(String name, Class<T> type, T def, String description) {
    ConfigKey<T> key =
        ConfigKey.newBuilder(name, type).defaultValue(def).description(description).stock().build();
    ALL.add(key);
    return key;
  }

  private static <T> ConfigKey<T> scr(String name, Class<T> type, T def, String description) {
    ConfigKey<T> key =
        ConfigKey.newBuilder(name, type).defaultValue(def).description(description).build();
    ALL.add(key);
    return key;
  }

  // ------------------------------------------------------------------ derived values

  /**
   * The timeout (ms) of each read and write on a DataNode's UNIX socket: {@link
   * #NET_READ_TIMEOUT_MS} when set, else min({@link #DFS_CLIENT_SOCKET_TIMEOUT}, 5000), and 5000
   * when that is not positive.
   */
  public static int netReadTimeoutMs(org.apache.hadoop.conf.Configuration conf) {
    Integer set = NET_READ_TIMEOUT_MS.get(conf::get);
    if (set != null) {
      return set;
    }
    int derived = Math.min(DFS_CLIENT_SOCKET_TIMEOUT.get(conf::get), 5000);
    return derived > 0 ? derived : 5000;
  }

  /**
   * The age (ms) after which a replica opened without a slot is stale: {@link
   * #REPLICA_STALE_THRESHOLD_MS} when set, else the stock {@link #DFS_REPLICA_STALE_THRESHOLD_MS}
   * when set, else 300000.
   */
  public static long replicaStaleThresholdMs(org.apache.hadoop.conf.Configuration conf) {
    Long set = REPLICA_STALE_THRESHOLD_MS.get(conf::get);
    if (set != null) {
      return set;
    }
    return DFS_REPLICA_STALE_THRESHOLD_MS.isSet(conf::get)
        ? DFS_REPLICA_STALE_THRESHOLD_MS.get(conf::get)
        : 300000L;
  }
}
