package io.scr.core.internal.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.core.internal.protocol.ShortCircuitProtocol;
import io.scr.shm.ShmId;
import io.scr.shm.SlotId;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessRequestProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReleaseShortCircuitAccessResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.newsclub.net.unix.AFUNIXServerSocket;
import org.newsclub.net.unix.AFUNIXSocket;
import org.newsclub.net.unix.AFUNIXSocketAddress;

/**
 * Negotiation of the shim's extensions against scripted peers on a real UNIX socket: a stock peer
 * (refuses the HELLO slot's release as an unknown segment) is asked once per socket file, a shim
 * peer's answer enables batched releases, and a new socket file (a restarted DataNode) is asked
 * again.
 */
class PeerExtensionsTest {
  @TempDir Path dir;

  private final List<FakePeer> peers = new ArrayList<>();
  private DomainSocketPool pool;

  @BeforeEach
  void pool() {
    pool = DomainSocketPool.newBuilder().connectTimeoutMs(2000).readTimeoutMs(5000).build();
  }

  @AfterEach
  void close() throws Exception {
    pool.close();
    for (FakePeer p : peers) {
      p.close();
    }
  }

  private FakePeer start(String name, boolean shim) throws IOException {
    FakePeer p = new FakePeer(dir.resolve(name).toFile(), shim);
    peers.add(p);
    return p;
  }

  @Test
  void stockPeerIsAskedOncePerSocketFileAndAgainAfterItIsBoundAnew() throws Exception {
    FakePeer stock = start("stock.sock", false);
    PeerExtensions ext = new PeerExtensions(pool, true);
    for (int i = 0; i < 5; i++) {
      assertSame(PeerExtensions.Features.STOCK, ext.features(stock.path()));
    }
    assertEquals(1, stock.hellos.get(), "one HELLO for five questions");
    assertEquals(0, stock.unknownOps.get(), "no op a stock DataNode logs as an error");
    assertEquals(1, ext.probeCount());
    assertEquals(0, ext.extendedPathCount());
    assertEquals(0, pool.idleConnectionCount(), "the stock peer's connection is not pooled");

    // The DataNode restarts: it unlinks and binds the socket file again.
    stock.stopForRestart();
    FakePeer restarted = start("stock.sock", false);
    assertFalse(ext.features(restarted.path()).any());
    assertFalse(ext.features(restarted.path()).any());
    assertEquals(1, restarted.hellos.get(), "asked again once after the restart");
    assertEquals(0, restarted.unknownOps.get());
    assertEquals(2, ext.probeCount());
  }

  @Test
  void shimPeerOffersBatchedReleasesOnAPooledConnection() throws Exception {
    FakePeer shim = start("shim.sock", true);
    PeerExtensions ext = new PeerExtensions(pool, true);
    PeerExtensions.Features f = ext.features(shim.path());
    assertTrue(f.batchRelease());
    assertTrue(f.batchFds());
    assertEquals(f, ext.features(shim.path()));
    assertEquals(1, shim.hellos.get());
    assertEquals(1, ext.extendedPathCount());
    assertEquals(List.of(shim.path()), ext.extendedPaths());
    assertEquals(1, pool.idleConnectionCount(), "the shim keeps the connection: pooled");

    // 600 slots: two frames (512 + 88), on the pooled connection, each slot answered in order.
    List<SlotId> slots = new ArrayList<>();
    ShmId shm = ShmId.random();
    for (int i = 0; i < 600; i++) {
      slots.add(SlotId.of(shm, i % 128));
    }
    assertEquals(2, ShortCircuitExchanges.releaseSlotsBatched(pool, shim.path(), slots));
    assertEquals(600, shim.released.size());
    assertEquals(slots, shim.released);
    assertEquals(1, pool.connectCount(), "HELLO and both frames on one connection");
  }

  @Test
  void refusedSlotFailsTheBatchAfterEverySlotWasTold() throws Exception {
    FakePeer shim = start("shim.sock", true);
    shim.refuseIndex = 3;
    List<SlotId> slots = new ArrayList<>();
    ShmId shm = ShmId.random();
    for (int i = 0; i < 6; i++) {
      slots.add(SlotId.of(shm, i));
    }
    IOException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            IOException.class,
            () -> ShortCircuitExchanges.releaseSlotsBatched(pool, shim.path(), slots));
    assertTrue(e.getMessage().contains("slot " + slots.get(3)), e.getMessage());
    assertEquals(6, shim.released.size(), "the slots after the refused one were released too");
  }

  @Test
  void disabledNeverAsks() throws Exception {
    FakePeer shim = start("shim.sock", true);
    PeerExtensions ext = new PeerExtensions(pool, false);
    assertFalse(ext.features(shim.path()).any());
    assertEquals(0, shim.connections.get());
    assertEquals(0, ext.probeCount());
  }

  @Test
  void missingSocketIsStockWithoutAProbe() {
    PeerExtensions ext = new PeerExtensions(pool, true);
    assertFalse(ext.features(dir.resolve("none.sock").toString()).any());
    assertEquals(0, ext.probeCount());
    assertEquals(0, pool.connectFailureCount());
  }

  @Test
  void failedExtensionRequestMakesThePathStockUntilItsSocketChanges() throws Exception {
    FakePeer shim = start("shim.sock", true);
    PeerExtensions ext = new PeerExtensions(pool, true);
    assertTrue(ext.features(shim.path()).batchRelease());
    ext.extensionFailed(shim.path(), "test");
    assertFalse(ext.features(shim.path()).any());
    assertEquals(1, shim.hellos.get());
    assertEquals(1, ext.extensionFailureCount());
    assertEquals(0, ext.extendedPathCount());

    shim.stopForRestart();
    FakePeer restarted = start("shim.sock", true);
    assertTrue(ext.features(restarted.path()).batchRelease());
    assertEquals(1, restarted.hellos.get());
  }

  @Test
  void advertisementParsing() {
    assertFalse(PeerExtensions.Features.parse(null).any());
    assertFalse(PeerExtensions.Features.parse("scr-shim-extensions/2 batch-release").any());
    assertFalse(PeerExtensions.Features.parse("").any());
    PeerExtensions.Features onlyRelease =
        PeerExtensions.Features.parse("scr-shim-extensions/1 batch-release future-thing");
    assertTrue(onlyRelease.batchRelease());
    assertFalse(onlyRelease.batchFds());
    PeerExtensions.Features none = PeerExtensions.Features.parse("scr-shim-extensions/1");
    assertTrue(none.any());
    assertFalse(none.batchRelease());
  }

  /**
   * A peer on a UNIX socket: a stock DataNode (answers a release of an unknown segment
   * ERROR_INVALID, closes the connection on op 127) or an scr shim (answers HELLO and BATCH_RELEASE
   * as {@code ShortCircuitService} does).
   */
  private static final class FakePeer implements AutoCloseable {
    final AtomicInteger connections = new AtomicInteger();
    final AtomicInteger hellos = new AtomicInteger();
    final AtomicInteger unknownOps = new AtomicInteger();
    final List<SlotId> released = new CopyOnWriteArrayList<>();
    volatile int refuseIndex = -1;
    private volatile AFUNIXSocket current;
    private final File file;
    private final boolean shim;
    private final AFUNIXServerSocket server;
    private final Thread thread;

    FakePeer(File file, boolean shim) throws IOException {
      this.file = file;
      this.shim = shim;
      Files.deleteIfExists(file.toPath());
      server = AFUNIXServerSocket.newInstance();
      server.bind(AFUNIXSocketAddress.of(file));
      thread = new Thread(this::serve, "fake-peer-" + file.getName());
      thread.setDaemon(true);
      thread.start();
    }

    String path() {
      return file.getPath();
    }

    private void serve() {
      while (!server.isClosed()) {
        try (AFUNIXSocket s = (AFUNIXSocket) server.accept()) {
          current = s;
          connections.incrementAndGet();
          InputStream in = s.getInputStream();
          OutputStream out = s.getOutputStream();
          while (true) {
            int op = ShortCircuitProtocol.readOpHeader(in);
            if (op < 0) {
              break; // the client closed the connection
            }
            if (op == ShortCircuitProtocol.OP_RELEASE_SHORT_CIRCUIT_FDS) {
              ReleaseShortCircuitAccessRequestProto r =
                  ReleaseShortCircuitAccessRequestProto.parseFrom(readBody(in));
              boolean hello =
                  ShortCircuitProtocol.HELLO_SLOT.equals(
                      ShortCircuitProtocol.fromProto(r.getSlotId()));
              if (hello) {
                hellos.incrementAndGet();
              }
              // Stock: no such segment. The shim: its advertisement for the HELLO slot.
              ReleaseShortCircuitAccessResponseProto.Builder answer =
                  ReleaseShortCircuitAccessResponseProto.newBuilder();
              if (shim && hello) {
                answer
                    .setStatus(Status.SUCCESS)
                    .setError("scr-shim-extensions/1 batch-fds batch-release");
              } else {
                answer.setStatus(Status.ERROR_INVALID).setError("no such segment");
              }
              answer.build().writeDelimitedTo(out);
              out.flush();
              continue;
            }
            if (op != ShortCircuitProtocol.OP_SCR_EXTENSION || !shim) {
              // "Unknown op": a stock DataNode closes the connection (and logs an error)
              unknownOps.incrementAndGet();
              break;
            }
            byte[] body = readBody(in);
            {
              java.io.ByteArrayInputStream b =
                  new java.io.ByteArrayInputStream(body, 1, body.length - 1);
              java.io.ByteArrayOutputStream answers = new java.io.ByteArrayOutputStream();
              while (b.available() > 0) {
                ReleaseShortCircuitAccessRequestProto r =
                    ReleaseShortCircuitAccessRequestProto.parseDelimitedFrom(b);
                int n = released.size();
                released.add(ShortCircuitProtocol.fromProto(r.getSlotId()));
                ReleaseShortCircuitAccessResponseProto.newBuilder()
                    .setStatus(n == refuseIndex ? Status.ERROR_INVALID : Status.SUCCESS)
                    .build()
                    .writeDelimitedTo(answers);
              }
              out.write(answers.toByteArray());
            }
            out.flush();
          }
        } catch (IOException e) {
          // closed: the test is over, or the client went away
        }
      }
    }

    private static byte[] readBody(InputStream in) throws IOException {
      int length = 0;
      for (int shift = 0; ; shift += 7) {
        int b = in.read();
        if (b < 0) {
          throw new java.io.EOFException();
        }
        length |= (b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          break;
        }
      }
      byte[] body = new byte[length];
      new java.io.DataInputStream(in).readFully(body);
      return body;
    }

    /**
     * Stops as a DataNode does for a restart. The socket file is moved aside first, so the next
     * peer's file cannot reuse its inode number within the same timestamp tick (a real restart
     * takes seconds; a test takes microseconds).
     */
    void stopForRestart() throws Exception {
      Files.move(file.toPath(), new File(file.getPath() + ".old").toPath());
      close();
    }

    @Override
    public void close() throws Exception {
      server.close();
      AFUNIXSocket c = current;
      if (c != null) {
        c.close(); // a DataNode that stops drops its connections
      }
      thread.join(5000);
    }
  }
}
