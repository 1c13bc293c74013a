package io.scr.core.hdfs;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocolPB.ClientDatanodeProtocolTranslatorPB;
import org.apache.hadoop.ipc.RPC;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * A stock DataNode's {@code getReplicaVisibleLength} RPC, for the blocks being written that this
 * file system's streams tail, over a connection kept between calls.
 *
 * <p>Stock asks it through a proxy made for one call ({@code
 * DFSUtilClient.createClientDatanodeProtocolProxy}): a copy of the whole configuration, a new user
 * per call holding the block's token, and an idle time of 0, so every call opens and authenticates
 * a new TCP connection. A tailing reader asks it on every reopen and at every end of its stream,
 * and with a stock DataNode (mode A) that connection was most of a tail read's delay once the bytes
 * themselves are read short-circuit. Here one proxy per block and DataNode is kept, with its user
 * (the block's token, as stock's) and the client's configuration copied once, so Hadoop's IPC
 * client keeps the connection for its idle time ({@code ipc.client.connection.maxidletime}) and the
 * calls that follow are one round trip on it. A call waits at most {@link #MAX_CALL_MILLIS} (stock:
 * the client's socket timeout), because a caller that gets no answer measures the stock way next.
 *
 * <p>At most {@link #MAX_PROXIES} proxies are kept (the least recently used goes); a call that
 * fails drops its proxy, so a token that expired or a DataNode that restarted costs one failed call
 * that the caller answers the stock way. {@link #close} stops every proxy.
 *
 * <p>Thread-safety: thread-safe. The map is guarded by this object's lock; calls run outside it and
 * may share a proxy (Hadoop's IPC client is thread-safe).
 */
final class VisibleLengthRpc implements AutoCloseable {
  /**
   * The longest a call waits for its answer (the client's socket timeout when shorter). A healthy
   * DataNode answers in milliseconds; on a hung one, the caller measures the stock way after this,
   * and stock may ask the same DataNode again with its own timeout, so this bounds what scr adds to
   * stock's wait there.
   */
  static final int MAX_CALL_MILLIS = 2000;

  /** Proxies kept at most: blocks being written that one process tails at once. */
  static final int MAX_PROXIES = 64;

  private final Configuration conf;
  private final int socketTimeoutMs;
  private final boolean connectViaHostname;

  @GuardedBy("this")
  private final Map<Key, ClientDatanodeProtocol> proxies =
      new LinkedHashMap<>(16, 0.75f, true); // access order: the eldest is the least recently used

  @GuardedBy("this")
  private boolean closed;

  /**
   * @param conf the client's configuration (copied once)
   * @param socketTimeoutMs the client's socket timeout; the calls' timeout is the shorter of it and
   *     {@link #MAX_CALL_MILLIS}
   * @param connectViaHostname whether the client connects to DataNodes by host name
   */
  VisibleLengthRpc(Configuration conf, int socketTimeoutMs, boolean connectViaHostname) {
    this.conf = new Configuration(conf);
    this.socketTimeoutMs =
        socketTimeoutMs > 0 ? Math.min(socketTimeoutMs, MAX_CALL_MILLIS) : MAX_CALL_MILLIS;
    this.connectViaHostname = connectViaHostname;
  }

  /**
   * The visible length of {@code block}'s replica on {@code dataNode}, as stock's {@code
   * DFSInputStream.readBlockLength} asks it of one location.
   *
   * @throws IOException what the call threw (its proxy is dropped)
   */
  long visibleLength(LocatedBlock block, DatanodeInfo dataNode) throws IOException {
    Key key = new Key(dataNode.getIpcAddr(connectViaHostname), block);
    ClientDatanodeProtocol proxy = proxyFor(key, block, dataNode);
    try {
      return proxy.getReplicaVisibleLength(block.getBlock());
    } catch (IOException | RuntimeException e) {
      drop(key, proxy);
      throw e;
    }
  }

  private ClientDatanodeProtocol proxyFor(Key key, LocatedBlock block, DatanodeInfo dataNode)
      throws IOException {
    synchronized (this) {
      if (closed) {
        throw new IOException("the file system is closed");
      }
      ClientDatanodeProtocol kept = proxies.get(key);
      if (kept != null) {
        return kept;
      }
    }
    ClientDatanodeProtocol made = newProxy(block, dataNode);
    List<ClientDatanodeProtocol> stop = new ArrayList<>(2);
    ClientDatanodeProtocol use;
    synchronized (this) {
      ClientDatanodeProtocol raced = closed ? null : proxies.get(key);
      if (closed || raced != null) {
        stop.add(made); // closed, or another thread kept one first
        use = raced;
      } else {
        proxies.put(key, made);
        use = made;
        Iterator<ClientDatanodeProtocol> eldest = proxies.values().iterator();
        while (proxies.size() > MAX_PROXIES) {
          stop.add(eldest.next());
          eldest.remove();
        }
      }
    }
    stop.forEach(RPC::stopProxy);
    if (use == null) {
      throw new IOException("the file system is closed");
    }
    return use;
  }

  /**
   * A proxy whose user is named after the block and holds its token, as stock's one-call proxy,
   * with this file system's configuration and the call timeout above.
   */
  private ClientDatanodeProtocol newProxy(LocatedBlock block, DatanodeInfo dataNode)
      throws IOException {
    UserGroupInformation ticket =
        UserGroupInformation.createRemoteUser(block.getBlock().getLocalBlock().toString());
    ticket.addToken(block.getBlockToken());
    try {
      return ticket.doAs(
          (java.security.PrivilegedExceptionAction<ClientDatanodeProtocol>)
              () ->
                  new ClientDatanodeProtocolTranslatorPB(
                      dataNode, conf, socketTimeoutMs, connectViaHostname));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted making a proxy to " + dataNode);
    }
  }

  private void drop(Key key, ClientDatanodeProtocol proxy) {
    boolean removed;
    synchronized (this) {
      removed = proxies.remove(key, proxy);
    }
    if (removed) {
      RPC.stopProxy(proxy);
    }
  }

  /** Proxies kept now. */
  synchronized int size() {
    return proxies.size();
  }

  @Override
  public void close() {
    List<ClientDatanodeProtocol> stop;
    synchronized (this) {
      closed = true;
      stop = new ArrayList<>(proxies.values());
      proxies.clear();
    }
    stop.forEach(RPC::stopProxy);
  }

  /** A DataNode's IPC address and a block (pool, id and generation stamp). */
  private static final class Key {
    private final String address;
    private final String pool;
    private final long blockId;
    private final long generationStamp;

    Key(String address, LocatedBlock block) {
      this.address = address;
      this.pool = block.getBlock().getBlockPoolId();
      this.blockId = block.getBlock().getBlockId();
      this.generationStamp = block.getBlock().getGenerationStamp();
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Key)) {
        return false;
      }
      Key k = (Key) o;
      return blockId == k.blockId
          && generationStamp == k.generationStamp
          && address.equals(k.address)
          && pool.equals(k.pool);
    }

    @Override
    public int hashCode() {
      return Objects.hash(address, pool, blockId, generationStamp);
    }
  }
}
