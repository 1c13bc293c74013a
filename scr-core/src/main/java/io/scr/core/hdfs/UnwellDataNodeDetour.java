package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.core.internal.engine.Engine;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.ReplicaAccessor;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replica accessor's way around a local DataNode scr knows is unwell (hung, dead, or back on a
 * probe's word only: {@link Engine#isDataNodeUnwell}).
 *
 * <p><b>Why.</b> Stock's {@code BlockReaderFactory} asks the accessor builder after it has chosen a
 * DataNode, and tells the builder neither which one nor the stream: an accessor that declines
 * (null) leaves stock reading from its choice, the local DataNode listed first, and a hung one
 * holds that read for stock's socket timeout. Stock's seams for steering (the stream's dead nodes,
 * {@code DFSClient.addNodeToDeadNodeDetector}) all need the stream. So while a local DataNode is
 * unwell and the block has another usable replica, the builder returns an accessor that serves the
 * block's bytes through a stock stream of the file of scr's own ({@link DetourStream}: a {@code
 * DFSInputStream} on a {@code DFSClient} of the same configuration, without the accessor builder,
 * whose every DataNode choice skips the unwell local DataNodes): stock then never contacts the
 * DataNode it chose, and the bytes come over TCP from another replica, checksummed by stock's
 * remote block reader, which also reports a corrupt replica it meets and moves on as stock does.
 *
 * <p><b>When it declines</b> (null: stock reads as it chose): no local DataNode is unwell; the
 * block has no usable replica but the unwell one (stock waits as it always does); the file is still
 * being written (stock would ask a DataNode for its last block's length); {@code fs.defaultFS} is
 * not the {@code hdfs://} namespace of the block's pool (a federated or {@code viewfs://} client:
 * the file name alone does not say which NameNode holds it; said once in the log); the NameNode
 * does not know the file or the block any more. Hadoop 3.3.6, 3.4.2 and 3.5.0 all have the members
 * used (the {@code DFSInputStream} constructor with a block list, its protected {@code
 * getBestNodeDNAddrPair}, {@code DFSClient(URI, Configuration)} and {@code getLocatedBlocks(String,
 * long, long)}).
 *
 * <p><b>Cost.</b> One NameNode call per file while the DataNode is unwell (the stream and its block
 * list are kept per file and reused by every accessor of the file until {@value #IDLE_SECONDS} s
 * without a read); each read is a stock positional read of another replica, as stock's own read of
 * a remote replica would be. Counted ({@link #detouredBlocks()}) and said once in the log.
 *
 * <p>Thread-safety: thread-safe. One instance per client context; the {@code DFSClient} is created
 * on first need under this object's monitor; streams are shared by accessors (positional reads are
 * thread-safe) and closed only when no accessor holds them.
 */
final class UnwellDataNodeDetour implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(UnwellDataNodeDetour.class);

  /** A file's stream is closed after this long without an accessor reading it. */
  static final long IDLE_SECONDS = 30;

  /** Files whose streams are kept at once; beyond it idle ones are closed first. */
  static final int MAX_FILES = 64;

  private static final AtomicBoolean SAID = new AtomicBoolean();
  private static final AtomicBoolean SAID_NO_NAMESPACE = new AtomicBoolean();
  private static final LongAdder DETOURED = new LongAdder();

  private final Engine scr;
  private final Configuration conf;
  private final Map<String, Held> streams = new ConcurrentHashMap<>();

  @GuardedBy("this")
  private DFSClient client;

  @GuardedBy("this")
  private boolean closed;

  UnwellDataNodeDetour(Engine scr, Configuration conf) {
    this.scr = scr;
    this.conf = conf;
  }

  /**
   * Makes the {@code DFSClient} now (no NameNode call), so that the first read that needs the
   * detour does not pay for it. A failure is left to that read.
   */
  void prepare() {
    try {
      client(false);
    } catch (IOException | RuntimeException e) {
      LOG.debug("the detour's DFSClient could not be made yet", e);
    }
  }

  /** Blocks the replica accessor has read around an unwell local DataNode in this process. */
  static long detouredBlocks() {
    return DETOURED.sum();
  }

  /** Whether any local DataNode socket of {@code scr} is unwell now (no I/O). */
  static boolean anyLocalUnwell(Engine scr) {
    for (String path : scr.localSocketPaths()) {
      if (scr.isDataNodeUnwell(path)) {
        return true;
      }
    }
    return false;
  }

  /**
   * An accessor reading {@code block} of {@code fileName} from a replica other than an unwell local
   * DataNode's, or null when there is no need or no way (see the class comment).
   */
  ReplicaAccessor accessor(String fileName, ExtendedBlock block, boolean verifyChecksum) {
    if (fileName == null || !anyLocalUnwell(scr)) {
      return null;
    }
    try {
      Held held = held(fileName, verifyChecksum, block, false);
      LocatedBlock lb = held == null ? null : held.find(block);
      if (held != null && lb == null) {
        held.release();
        held = held(fileName, verifyChecksum, block, true); // replaced, or appended: ask again
        lb = held == null ? null : held.find(block);
      }
      if (lb == null) {
        if (held != null) {
          held.release();
        }
        return null;
      }
      if (!worthIt(lb)) {
        held.release();
        return null;
      }
      DETOURED.increment();
      if (SAID.compareAndSet(false, true)) {
        LOG.info(
            "A local DataNode is unwell: the replica accessor reads blocks stock would ask it for"
                + " through a stock stream of its own that skips it (remote replicas over TCP,"
                + " checksummed), until it answers again");
      }
      return new Accessor(held, lb.getStartOffset(), lb.getBlockSize());
    } catch (IOException | RuntimeException e) {
      LOG.debug("no detour for {} of {}; stock reads it", block, fileName, e);
      return null;
    }
  }

  /**
   * Whether a read of {@code lb} could meet an unwell local DataNode (one of its locations) and has
   * another location to go to.
   */
  private boolean worthIt(LocatedBlock lb) {
    DatanodeInfo[] locations = lb.getLocations();
    if (locations == null || locations.length < 2) {
      return false;
    }
    boolean unwell = false;
    boolean other = false;
    for (DatanodeInfo dn : locations) {
      String path = scr.socketPathOf(dn);
      if (path != null && scr.isDataNodeUnwell(path)) {
        unwell = true;
      } else {
        other = true;
      }
    }
    return unwell && other;
  }

  /** The held stream of {@code fileName} (one reference taken), or null when none can be opened. */
  private Held held(String fileName, boolean verifyChecksum, ExtendedBlock block, boolean fresh)
      throws IOException {
    String key = (verifyChecksum ? "v:" : "n:") + fileName;
    long now = System.nanoTime();
    if (!fresh) {
      Held h = streams.get(key);
      if (h != null && h.acquire(now)) {
        return h;
      }
    }
    DFSClient c = client(true);
    if (c == null) {
      return null;
    }
    LocatedBlocks blocks = c.getLocatedBlocks(fileName, 0, Long.MAX_VALUE);
    if (blocks == null
        || blocks.isUnderConstruction()
        || blocks.getLocatedBlocks().isEmpty()
        || !block
            .getBlockPoolId()
            .equals(blocks.getLocatedBlocks().get(0).getBlock().getBlockPoolId())) {
      return null;
    }
    Held h = new Held(new DetourStream(c, fileName, verifyChecksum, blocks, scr), blocks);
    h.acquire(now);
    Held old = streams.put(key, h);
    if (old != null) {
      old.retire();
    }
    sweep(now);
    return h;
  }

  /**
   * Closes streams idle for {@value #IDLE_SECONDS} s, and the oldest beyond {@value #MAX_FILES}.
   */
  private void sweep(long now) {
    long idle = TimeUnit.SECONDS.toNanos(IDLE_SECONDS);
    List<Use> uses = new ArrayList<>();
    for (Map.Entry<String, Held> e : streams.entrySet()) {
      uses.add(new Use(e.getKey(), e.getValue()));
    }
    int over = uses.size() - MAX_FILES;
    uses.sort((a, b) -> Long.compare(a.at, b.at));
    for (Use u : uses) {
      if ((over > 0 || now - u.at > idle) && streams.remove(u.key, u.held)) {
        u.held.retire();
        over--;
      }
    }
  }

  /** A held stream and when it was last used, read once (the sort needs values that hold still). */
  private static final class Use {
    final String key;
    final Held held;
    final long at;

    Use(String key, Held held) {
      this.key = key;
      this.held = held;
      this.at = held.usedAt;
    }
  }

  /**
   * The {@code DFSClient} of the detour streams: {@code fs.defaultFS}'s NameNode, the same
   * configuration without the accessor builder (its reads must not come back here). Null when
   * {@code fs.defaultFS} is not an {@code hdfs://} URI.
   */
  private synchronized DFSClient client(boolean say) throws IOException {
    if (closed) {
      return null;
    }
    if (client == null) {
      URI uri = FileSystem.getDefaultUri(conf);
      if (!"hdfs".equals(uri.getScheme())) {
        if (say && SAID_NO_NAMESPACE.compareAndSet(false, true)) {
          LOG.info(
              "fs.defaultFS is {}, not an hdfs:// NameNode: the replica accessor cannot read"
                  + " around an unwell local DataNode: stock reads from the DataNode it chose",
              uri);
        }
        return null;
      }
      Configuration c = new Configuration(conf);
      c.unset(HdfsClientConfigKeys.REPLICA_ACCESSOR_BUILDER_CLASSES_KEY);
      client = new DFSClient(uri, c);
    }
    return client;
  }

  @Override
  public void close() {
    DFSClient c;
    synchronized (this) {
      closed = true;
      c = client;
      client = null;
    }
    for (String key : new ArrayList<>(streams.keySet())) {
      Held h = streams.remove(key);
      if (h != null) {
        h.retire();
      }
    }
    if (c != null) {
      try {
        c.close();
      } catch (IOException e) {
        LOG.debug("closing the detour's DFSClient failed", e);
      }
    }
  }

  /**
   * A file's detour stream and its block list, shared by the accessors reading it: closed once it
   * is retired (replaced, idle, or the detour closed) and no accessor holds it. Thread-safe: its
   * counts are under its monitor.
   */
  private static final class Held {
    final DetourStream stream;
    final LocatedBlocks blocks;
    volatile long usedAt;

    @GuardedBy("this")
    private int refs;

    @GuardedBy("this")
    private boolean retired;

    Held(DetourStream stream, LocatedBlocks blocks) {
      this.stream = stream;
      this.blocks = blocks;
    }

    synchronized boolean acquire(long now) {
      if (retired) {
        return false;
      }
      refs++;
      usedAt = now;
      return true;
    }

    void release() {
      boolean close;
      synchronized (this) {
        refs--;
        close = retired && refs == 0;
      }
      if (close) {
        closeStream();
      }
    }

    void retire() {
      boolean close;
      synchronized (this) {
        retired = true;
        close = refs == 0;
      }
      if (close) {
        closeStream();
      }
    }

    private void closeStream() {
      try {
        stream.close();
      } catch (IOException e) {
        LOG.debug("closing a detour stream failed", e);
      }
    }

    /** The located block of {@code block} (same id and generation stamp), or null. */
    LocatedBlock find(ExtendedBlock block) {
      for (LocatedBlock lb : blocks.getLocatedBlocks()) {
        if (lb.getBlock().getBlockId() == block.getBlockId()) {
          return lb.getBlock().getGenerationStamp() == block.getGenerationStamp() ? lb : null;
        }
      }
      return null;
    }
  }

  /**
   * One block's bytes read through the file's detour stream: block offsets become file offsets,
   * reads stop at the block's end. Not short-circuit, not local (stock counts its bytes as remote).
   * Used by one block reader at a time.
   */
  private static final class Accessor extends ReplicaAccessor {
    private final Held held;
    private final long start;
    private final long length;
    private boolean closed;

    Accessor(Held held, long start, long length) {
      this.held = held;
      this.start = start;
      this.length = length;
    }

    @Override
    public int read(long pos, byte[] buf, int off, int len) throws IOException {
      if (pos >= length) {
        return -1;
      }
      int n = (int) Math.min(len, length - pos);
      if (n == 0) {
        return 0;
      }
      held.usedAt = System.nanoTime();
      return held.stream.read(start + pos, buf, off, n);
    }

    @Override
    public int read(long pos, ByteBuffer buf) throws IOException {
      if (pos >= length) {
        return -1;
      }
      int n = (int) Math.min(buf.remaining(), length - pos);
      if (n == 0) {
        return 0;
      }
      held.usedAt = System.nanoTime();
      ByteBuffer slice = buf.duplicate();
      slice.limit(slice.position() + n);
      int got = held.stream.read(start + pos, slice);
      if (got > 0) {
        buf.position(buf.position() + got);
      }
      return got;
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        held.release();
      }
    }

    @Override
    public boolean isLocal() {
      return false;
    }

    @Override
    public boolean isShortCircuit() {
      return false;
    }

    @Override
    public int getNetworkDistance() {
      return 2; // another DataNode than the client's (stock counts distance 0 as local)
    }
  }
}
