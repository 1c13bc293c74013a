package io.scr.core.internal.net;

import java.io.IOException;

/** Test access to a segment's connection from other packages' tests. */
public final class SegmentConnections {
  private SegmentConnections() {}

  /**
   * Ends the client's reading side of {@code connection}: the segment watcher sees EOF while the
   * DataNode neither closed it nor touched the segment's slots, as after a kill -9 of the DataNode.
   */
  public static void endOfStreamWithoutTheDataNode(DomainConnection connection) throws IOException {
    connection.socket().shutdownInput();
  }
}
