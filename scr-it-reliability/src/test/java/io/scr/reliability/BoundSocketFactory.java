package io.scr.reliability;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import org.apache.hadoop.net.StandardSocketFactory;

/**
 * A socket factory for a DataNode JVM of {@link ProcessHdfs} bound to a loopback alias (127.0.0.2,
 * 127.0.0.3): every socket it creates is bound to that address before Hadoop connects it, so the
 * DataNode's RPCs to the NameNode start from its own address. The NameNode records the address a
 * DataNode registers from ({@code DatanodeManager.registerDatanode} takes {@code
 * Server.getRemoteIp()}), so without this every DataNode on the host would register as 127.0.0.1.
 *
 * <p>Set through {@code hadoop.rpc.socket.factory.class.default} in the DataNode's own
 * configuration; the address comes from the JVM's system property {@value #BIND_PROPERTY}.
 * Stateless and thread-safe.
 */
public final class BoundSocketFactory extends StandardSocketFactory {
  static final String BIND_PROPERTY = "scr.it.bind.address";

  @Override
  public Socket createSocket() throws IOException {
    // A channel-backed socket, as StandardSocketFactory makes (Hadoop's timeouts need the channel).
    Socket s = SocketChannel.open().socket();
    String bind = System.getProperty(BIND_PROPERTY);
    if (bind != null && !bind.isEmpty()) {
      s.bind(new InetSocketAddress(InetAddress.getByName(bind), 0));
    }
    return s;
  }

  @Override
  public boolean equals(Object obj) {
    return obj instanceof BoundSocketFactory;
  }

  @Override
  public int hashCode() {
    return BoundSocketFactory.class.hashCode();
  }
}
