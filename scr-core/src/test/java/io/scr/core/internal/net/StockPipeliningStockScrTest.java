package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.scr.core.internal.protocol.ShortCircuitProtocol;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.FileDescriptor;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Why prefetch on open does not pipeline op 87 against a stock DataNode (mode A, real DataNode):
 * after sending a replica's fds the DataNode reads one byte as the client's receipt before it reads
 * the next request, so a request written ahead loses its first byte to the receipt and the DataNode
 * drops the connection on the broken header. A receipt written together with the next request (one
 * write) is served in order, which is all the overlap one connection allows.
 */
class StockPipeliningStockScrTest {
  static {
    io.scr.core.hdfs.JvmSingletonsAccess.initialize();
  }

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder()
          .dataNodes(1)
          .blockSize(64 * 1024)
          .mode(DataNodeMode.STOCK_SCR)
          .buildExtension();

  private static List<LocatedBlock> twoBlocks(String name) throws IOException {
    DFS.dfs().writeRandomFile(name, 2 * 64 * 1024, 41);
    return DFS.dfs().fileSystem().getClient().getLocatedBlocks(name, 0).getLocatedBlocks();
  }

  private static byte[] request(LocatedBlock lb) {
    return ShortCircuitProtocol.encodeRequestFds(lb.getBlock(), lb.getBlockToken(), null);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Reads one fd answer and its fds (closed at once); returns the data byte. */
  private static int answer(DomainConnection c) throws IOException {
    assertEquals(Status.SUCCESS, ShortCircuitProtocol.readFdResponse(c.in()).getStatus());
    FileDescriptor[] fds = new FileDescriptor[2];
    try {
      return c.receiveFds(fds, 2);
    } finally {
      DomainConnection.closeAll(fds);
    }
  }

  @Test
  void aRequestWrittenBeforeTheReceiptLosesItsFirstByteToIt() throws Exception {
    List<LocatedBlock> blocks = twoBlocks("/pipelining/ahead");
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      assertThrows(
          IOException.class,
          () ->
              pool.callOnNewConnection(
                  DFS.dfs().socketPath(0),
                  c -> {
                    c.send(concat(request(blocks.get(0)), request(blocks.get(1))));
                    assertEquals(ShortCircuitProtocol.USE_RECEIPT_VERIFICATION, answer(c));
                    // The DataNode took the second request's first byte (0) as the receipt and
                    // read a version of 0x1C57: it closes the connection instead of answering.
                    return ShortCircuitProtocol.readFdResponse(c.in());
                  }));
    }
  }

  @Test
  void theReceiptWrittenWithTheNextRequestIsServedInOrder() throws Exception {
    List<LocatedBlock> blocks = twoBlocks("/pipelining/folded");
    try (DomainSocketPool pool = DomainSocketPool.newBuilder().build()) {
      pool.callOnNewConnection(
          DFS.dfs().socketPath(0),
          c -> {
            c.send(request(blocks.get(0)));
            assertEquals(ShortCircuitProtocol.USE_RECEIPT_VERIFICATION, answer(c));
            c.send(concat(new byte[] {0}, request(blocks.get(1))));
            assertEquals(ShortCircuitProtocol.USE_RECEIPT_VERIFICATION, answer(c));
            c.sendByte(0);
            return null;
          });
    }
  }
}
