package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyBoolean;
import static org.mockito.ArgumentMatchers.anyLong;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import io.scr.cache.Ticker;
import io.scr.core.FallbackReason;
import io.scr.core.ReplicaLease;
import io.scr.core.internal.engine.Engine;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.internal.replica.AbsentReplicas;
import io.scr.core.internal.replica.LocalRead;
import io.scr.core.internal.replica.ReplicaSource;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import io.scr.testing.MiniDfsExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.mockito.stubbing.Answer;

/**
 * Which way {@link ScrFileSystem}'s stream sends each read: local finalized blocks through scr, and
 * to the stock stream the block being written, non-local replicas, a missing socket, checksum
 * failures and expired tokens — always with the written bytes as the result.
 */
class ScrFileSystemTest {
  private static final int BLOCK = 64 * 1024;

  @RegisterExtension
  static final MiniDfsExtension DFS =
      MiniDfs.builder().blockSize(BLOCK).mode(DataNodeMode.STOCK_SCR).buildExtension();

  private static ScrFileSystem scrFileSystem(String context, String socketPaths) {
    return DFS.dfs()
        .newFileSystem(
            c -> {
              c.set("fs.hdfs.impl", ScrFileSystem.class.getName());
              if (context != null) {
                c.set("scr.client.context", context);
              }
              if (socketPaths != null) {
                c.set("scr.client.socket.paths", socketPaths);
              }
            });
  }

  private static ScrInputStream unwrap(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  @Test
  void localFinalizedBlocksAreServedByScrNotStock() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/local", 3 * BLOCK + 1000, 1);
    ScrFileSystem fs = scrFileSystem(null, null);
    try (FSDataInputStream in = fs.open(new Path("/fs/local"))) {
      ScrInputStream stream = unwrap(in);
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      in.seek(100);
      byte[] some = new byte[BLOCK];
      in.readFully(some);
      assertArrayEquals(data, all);
      assertArrayEquals(slice(data, 100, BLOCK), some);
      assertEquals(4, stream.blocks().localBlockCount());
      assertTrue(
          stream.counters().shortCircuitReads() >= 4,
          "short-circuit reads " + stream.counters().shortCircuitReads());
      assertEquals(0, stream.counters().stockReads(), "no read may go the stock way");
      assertEquals(0, stream.counters().fallbacks());
      long total = data.length + BLOCK;
      assertEquals(
          total, ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
      assertTrue(fs.engine().cacheStats().toString().length() > 0);
    }
  }

  @Test
  void fileBeingWrittenShortCircuitsEveryBlockUpToItsVisibleLength() throws IOException {
    byte[] data = new byte[2 * BLOCK + BLOCK / 2 + 100];
    new Random(2).nextBytes(data);
    Path path = new Path("/fs/being-written");
    DistributedFileSystem writerFs = DFS.dfs().fileSystem();
    ScrFileSystem fs = scrFileSystem(null, null);
    try (FSDataOutputStream out = writerFs.create(path)) {
      out.write(data);
      out.hflush();
      try (FSDataInputStream in = fs.open(path)) {
        ScrInputStream stream = unwrap(in);
        assertEquals(data.length, stream.getFileLength());
        byte[] all = new byte[data.length];
        in.readFully(0, all);
        assertArrayEquals(data, all);
        assertEquals(
            3, stream.blocks().localBlockCount(), "the block being written short-circuits too");
        // The partial last chunk too: a stock DataNode (mode A) has written its checksum.
        assertEquals(
            data.length,
            ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead());
        assertEquals(
            data.length, ((HdfsDataInputStream) in).getReadStatistics().getTotalBytesRead());
        assertEquals(
            -1, in.read(data.length, new byte[1], 0, 1), "nothing past the visible length");
      }
    }
    try (FSDataInputStream in = fs.open(path)) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(3, unwrap(in).blocks().localBlockCount(), "closed: every block is finalized");
    }
  }

  @Test
  void missingSocketFallsBackToStock() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/missing-socket", 2 * BLOCK + 5, 3);
    String missing = DFS.dfs().socketDir().resolve("absent._PORT.sock").toString();
    ScrFileSystem fs = scrFileSystem("missing-socket-" + System.nanoTime(), missing);
    try (FSDataInputStream in = fs.open(new Path("/fs/missing-socket"))) {
      ScrInputStream stream = unwrap(in);
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(0, stream.counters().shortCircuitReads());
      assertTrue(stream.counters().fallbacks() >= 1, "fallbacks " + stream.counters().fallbacks());
      assertTrue(stream.counters().stockReads() >= 3);
      assertTrue(
          fs.engine().fallbackCount(FallbackReason.CONNECT_FAILED) >= 1,
          "connect failures counted");
    }
  }

  @Test
  void nonLocalReplicaIsReadByStockWithoutAskingForALease() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/remote", BLOCK + 7, 4);
    Engine scr = mockScr();
    when(scr.unreachableReason(any(DatanodeInfo.class))).thenReturn(FallbackReason.NOT_LOCAL);
    try (ScrInputStream in = open("/fs/remote", scr)) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(0, in.blocks().localBlockCount());
      assertEquals(4, in.counters().stockReads(), "two blocks read twice");
      verify(scr, times(4)).recordFallback(FallbackReason.NOT_LOCAL); // per read, not per build
      verify(scr, never()).socketPathOf(any(DatanodeInfo.class));
      verify(scr, never()).lease(any(), any(), anyString(), any(), any());
      verify(scr.replicaSource(), never()).lease(any(), any(), anyString(), any(), any(), any());
      verify(scr.replicaSource(), never())
          .lease(any(ReadContext.class), any(), any(), anyString(), any(), anyBoolean());
    }
  }

  @Test
  void checksumFailureGoesStockOncePerBlockAndIsCounted() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/corrupt", 2 * BLOCK, 5);
    Engine scr = mockScr();
    ReplicaLease lease = mock(ReplicaLease.class);
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/nowhere");
    when(streamLease(scr.replicaSource())).thenReturn(lease);
    when(lease.read(anyLong(), any(ByteBuffer.class), anyBoolean()))
        .thenThrow(new ChecksumException("injected", 0));
    try (ScrInputStream in = open("/fs/corrupt", scr)) {
      byte[] all = new byte[data.length];
      for (int i = 0; i < 3; i++) {
        in.readFully(0, all);
        assertArrayEquals(data, all);
      }
      assertEquals(
          2, in.counters().checksumFallbacks(), "one per block, then the block stays stock");
      assertEquals(0, in.blocks().localBlockCount());
      verify(scr.replicaSource(), org.mockito.Mockito.times(2))
          .release(any(ReadContext.class), org.mockito.ArgumentMatchers.eq(lease));
    }
  }

  @Test
  void expiredTokenRefetchesLocationsAndReadsStock() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/token", BLOCK, 6);
    Engine scr = mockScr();
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/nowhere");
    when(streamLease(scr.replicaSource())).thenThrow(new InvalidToken("injected")).thenReturn(null);
    try (ScrInputStream in = open("/fs/token", scr)) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(1, in.counters().fallbacks());
      assertEquals(1, in.blocks().localBlockCount(), "a refreshed token is tried again");
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(2, in.counters().fallbacks());
      assertEquals(0, in.blocks().localBlockCount(), "a null lease keeps the block stock");
    }
  }

  /**
   * A table built while the DataNode's socket backed off must not keep the block stock for the
   * stream's life: the backoff is checked when the read leases, and the next read after it
   * short-circuits.
   */
  @Test
  void aBackoffWhileTheTableIsBuiltLastsOnlyAsLongAsTheBackoff() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/backoff", BLOCK, 7);
    Engine scr = mockScr();
    ReplicaLease lease = servingLease(data);
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/dn.sock");
    when(scr.isBackingOff("/dn.sock")).thenReturn(true, false);
    when(streamLease(scr.replicaSource())).thenReturn(null, lease);
    try (ScrInputStream in = open("/fs/backoff", scr)) {
      byte[] buf = new byte[4096];
      in.readFully(0, buf); // backing off: stock
      assertArrayEquals(slice(data, 0, buf.length), buf);
      assertEquals(0, in.counters().shortCircuitReads());
      assertEquals(1, in.blocks().localBlockCount(), "a backoff demotes nothing");
      in.readFully(100, buf); // the backoff is over
      assertArrayEquals(slice(data, 100, buf.length), buf);
      assertEquals(1, in.counters().shortCircuitReads());
    }
  }

  /** A block whose short-circuit read failed goes stock for a bounded time, then is retried. */
  @Test
  void aFailedBlockIsRetriedAfterTheDemotionWindow() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/demoted", BLOCK, 8);
    Engine scr = mockScr();
    ReplicaLease lease = servingLease(data);
    when(lease.read(anyLong(), any(ByteBuffer.class), anyBoolean()))
        .thenThrow(new IOException("injected"))
        .thenAnswer(copyFrom(data));
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/dn.sock");
    when(streamLease(scr.replicaSource())).thenReturn(lease);
    AtomicLong now = new AtomicLong(-1L << 40); // a negative origin, as System.nanoTime may have
    try (ScrInputStream in = open("/fs/demoted", scr, now::get)) {
      byte[] buf = new byte[4096];
      in.readFully(0, buf);
      assertArrayEquals(slice(data, 0, buf.length), buf);
      assertEquals(1, in.counters().fallbacks());
      assertEquals(0, in.blocks().localBlockCount(), "demoted");
      now.addAndGet(TimeUnit.MILLISECONDS.toNanos(ScrInputStream.DEMOTION_MILLIS) - 1);
      in.readFully(0, buf);
      assertEquals(
          0, in.counters().shortCircuitReads(), "still demoted just before the window ends");
      now.addAndGet(1);
      in.readFully(0, buf);
      assertArrayEquals(slice(data, 0, buf.length), buf);
      assertEquals(1, in.counters().shortCircuitReads(), "retried once the window is over");
      assertEquals(1, in.blocks().localBlockCount());
      assertEquals(1, in.counters().fallbacks());
    }
  }

  /**
   * The reading thread's own interrupt fails that read with the interrupt (stock's rule) and is not
   * held against the block: the next read short-circuits.
   */
  @Test
  void theReadersOwnInterruptIsRethrownAndDemotesNothing() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/interrupted", BLOCK, 9);
    Engine scr = mockScr();
    ReplicaLease lease = servingLease(data);
    when(lease.read(anyLong(), any(ByteBuffer.class), anyBoolean()))
        .thenThrow(new ClosedByInterruptException())
        .thenAnswer(copyFrom(data));
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/dn.sock");
    when(streamLease(scr.replicaSource())).thenReturn(lease);
    try (ScrInputStream in = open("/fs/interrupted", scr)) {
      byte[] buf = new byte[4096];
      Thread.currentThread().interrupt();
      try {
        assertThrows(ClosedByInterruptException.class, () -> in.read(0, buf, 0, buf.length));
      } finally {
        Thread.interrupted();
      }
      in.readFully(0, buf);
      assertArrayEquals(slice(data, 0, buf.length), buf);
      assertEquals(1, in.counters().shortCircuitReads());
      assertEquals(0, in.counters().fallbacks());
      assertEquals(1, in.blocks().localBlockCount());
    }
  }

  /**
   * A replica channel closed under a read by someone else (another thread's interrupt where
   * channels stay interruptible) costs a second lease, not the block: the read short-circuits.
   */
  @Test
  void aChannelClosedUnderTheReadIsLeasedAgain() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/closed-under", BLOCK, 10);
    Engine scr = mockScr();
    ReplicaLease lease = servingLease(data);
    when(lease.read(anyLong(), any(ByteBuffer.class), anyBoolean()))
        .thenThrow(new AsynchronousCloseException())
        .thenAnswer(copyFrom(data));
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/dn.sock");
    when(streamLease(scr.replicaSource())).thenReturn(lease);
    try (ScrInputStream in = open("/fs/closed-under", scr)) {
      byte[] buf = new byte[4096];
      in.readFully(0, buf);
      assertArrayEquals(slice(data, 0, buf.length), buf);
      assertEquals(1, in.counters().shortCircuitReads());
      assertEquals(1, in.counters().reopens());
      assertEquals(0, in.counters().fallbacks());
      streamLease(verify(scr.replicaSource(), times(2)));
    }
  }

  /**
   * A block the engine remembers its local DataNode not holding is not demoted: asking again costs
   * a memory lookup, so every read asks and counts its fallback, as through the accessor.
   */
  @Test
  void aReplicaRememberedAbsentIsAskedPerReadNotDemoted() throws IOException {
    byte[] data = DFS.dfs().writeRandomFile("/fs/absent", BLOCK, 11);
    Engine scr = mockScr();
    when(scr.socketPathOf(any(DatanodeInfo.class))).thenReturn("/dn.sock");
    when(streamLease(scr.replicaSource())).thenReturn(null);
    DFSClient client = DFS.dfs().fileSystem().getClient();
    ExtendedBlock block = client.getLocatedBlocks("/fs/absent", 0).get(0).getBlock();
    scr.absentReplicas().remember(block, "/dn.sock");
    try (ScrInputStream in = open("/fs/absent", scr)) {
      byte[] buf = new byte[4096];
      for (int i = 0; i < 3; i++) {
        in.readFully(i * 100L, buf);
        assertArrayEquals(slice(data, i * 100, buf.length), buf);
      }
      assertEquals(1, in.blocks().localBlockCount(), "not demoted");
      assertEquals(3, in.counters().fallbacks(), "one per read");
      streamLease(verify(scr.replicaSource(), times(3)));
    }
  }

  /** A mocked engine with a real (empty) absent-replica memory. */
  private static Engine mockScr() {
    Engine scr = mock(Engine.class);
    ReplicaSource source = mock(ReplicaSource.class);
    when(scr.replicaSource()).thenReturn(source);
    when(scr.localRead()).thenReturn(new LocalRead(source));
    when(source.readContext()).thenAnswer(call -> new ReadContext(4096));
    AbsentReplicas absent = AbsentReplicas.newBuilder().build();
    when(scr.absentReplicas()).thenReturn(absent);
    return scr;
  }

  /** A lease whose reads serve {@code data} (a one-block file). */
  private static ReplicaLease servingLease(byte[] data) throws IOException {
    ReplicaLease lease = mock(ReplicaLease.class);
    when(lease.read(anyLong(), any(ByteBuffer.class), anyBoolean())).thenAnswer(copyFrom(data));
    when(lease.socketPath()).thenReturn("/dn.sock");
    return lease;
  }

  private static Answer<Integer> copyFrom(byte[] data) {
    return call -> {
      long pos = call.getArgument(0);
      ByteBuffer buf = call.getArgument(1);
      if (pos >= data.length) {
        return -1;
      }
      int n = (int) Math.min(buf.remaining(), data.length - pos);
      buf.put(data, (int) pos, n);
      return n;
    };
  }

  private static ScrInputStream open(String src, Engine scr, Ticker ticker) throws IOException {
    DFSClient client = DFS.dfs().fileSystem().getClient();
    return new ScrInputStream(
        client,
        src,
        true,
        client.getLocatedBlocks(src, 0),
        scr,
        ticker,
        ScrFileSystem.mappingBudget(null),
        new VisibleLengthRpc(DFS.dfs().fileSystem().getConf(), 60_000, false),
        -1);
  }

  /**
   * The lease call a stream makes for a read of a complete block, with argument matchers: inside
   * {@code when(...)}, or on {@code verify(...)}'s result.
   */
  private static ReplicaLease streamLease(ReplicaSource source) throws IOException {
    return source.lease(
        any(ReadContext.class),
        any(ExtendedBlock.class),
        any(),
        anyString(),
        any(),
        org.mockito.ArgumentMatchers.eq(false));
  }

  private static ScrInputStream open(String src, Engine scr) throws IOException {
    DFSClient client = DFS.dfs().fileSystem().getClient();
    return open(src, scr, Ticker.systemTicker());
  }

  private static byte[] slice(byte[] data, int pos, int len) {
    byte[] out = new byte[len];
    System.arraycopy(data, pos, out, 0, len);
    return out;
  }
}
