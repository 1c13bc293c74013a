package io.scr.core.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.junit.jupiter.api.Test;

/**
 * What {@link ScrFileSystem}'s stream serves of a file still being written, in one DataNode mode:
 * every byte up to the visible length the stream measured, equal to what was written, the block
 * being written short-circuit, its partial last chunk verified against the shim's in-memory
 * checksum (mode B) or the meta file's last checksum (mode A), never a corruption report.
 */
abstract class BeingWrittenReadContract {
  static final int BLOCK = 64 * 1024;
  static final int CHUNK = 512;

  abstract MiniDfs dfs();

  private ScrFileSystem scrFileSystem() {
    return dfs().newFileSystem(c -> c.set("fs.hdfs.impl", ScrFileSystem.class.getName()));
  }

  private static ScrInputStream unwrap(FSDataInputStream in) {
    return (ScrInputStream) ((HdfsDataInputStream) in).getWrappedStream();
  }

  private static long shortCircuitBytes(FSDataInputStream in) {
    return ((HdfsDataInputStream) in).getReadStatistics().getTotalShortCircuitBytesRead();
  }

  private boolean modeB() {
    return dfs().mode() == DataNodeMode.SHIM;
  }

  /**
   * A writer appends records of random sizes (many ending 1, 511 or 513 bytes past a chunk
   * boundary) and hflushes or hsyncs each; after each flush a reader opens the file, as a tailing
   * reader does, and reads it by random preads and by stateful reads to its end. Every byte equals
   * what was written, no read returns a byte past the visible length, and the block being written
   * is read short-circuit.
   */
  @Test
  void tailingReaderSeesExactlyTheWrittenBytesAndShortCircuitsTheBlockBeingWritten()
      throws IOException {
    Random random = new Random(27);
    Path path = new Path("/being-written/property-" + dfs().mode());
    DistributedFileSystem writerFs = dfs().fileSystem();
    ScrFileSystem fs = scrFileSystem();
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    long tailBytes = 0; // bytes read of the block being written
    long tailShortCircuit = 0; // of those, read short-circuit
    int[] pastBoundary = {1, 511, 513, 0, 1, 511, 513};
    try (FSDataOutputStream out = writerFs.create(path)) {
      for (int round = 0; round < 40; round++) {
        int size;
        if (round % 3 == 0) {
          // Lands 1, 511 or 513 bytes past a chunk boundary of the file.
          long len = written.size();
          long next = (len / CHUNK + 1 + random.nextInt(20)) * CHUNK;
          size = (int) (next + pastBoundary[round % pastBoundary.length] - len);
        } else {
          size = 1 + random.nextInt(random.nextBoolean() ? 600 : 9000);
        }
        byte[] record = new byte[size];
        random.nextBytes(record);
        out.write(record);
        written.write(record);
        if (random.nextBoolean()) {
          out.hflush();
        } else {
          out.hsync();
        }
        byte[] expected = written.toByteArray();
        long blockStart = (expected.length - 1) / BLOCK * (long) BLOCK;
        try (FSDataInputStream in = fs.open(path)) {
          ScrInputStream stream = unwrap(in);
          assertEquals(expected.length, stream.getFileLength(), "visible length at round " + round);
          // Positional reads: random ranges, some ending at the visible length.
          for (int r = 0; r < 6; r++) {
            int from = random.nextInt(expected.length);
            if (r % 2 == 0) {
              from = (int) Math.max(blockStart, expected.length - 1 - random.nextInt(1100));
            }
            int len = 1 + random.nextInt(expected.length - from);
            byte[] got = new byte[len];
            long before = shortCircuitBytes(in);
            in.readFully(from, got);
            assertArrayEquals(
                Arrays.copyOfRange(expected, from, from + len),
                got,
                "pread [" + from + ", +" + len + ") at round " + round);
            if (from >= blockStart) {
              tailBytes += len;
              tailShortCircuit += shortCircuitBytes(in) - before;
            }
          }
          // Never past the visible length.
          assertEquals(-1, in.read(expected.length, new byte[10], 0, 10));
          // Stateful: from the start of the block being written to the end of the file.
          in.seek(blockStart);
          byte[] rest = new byte[(int) (expected.length - blockStart)];
          int got = 0;
          long before = shortCircuitBytes(in);
          while (got < rest.length) {
            int n = in.read(rest, got, Math.min(rest.length - got, 1 + random.nextInt(4000)));
            assertTrue(n > 0, "stateful read returned " + n + " before the visible length");
            got += n;
          }
          assertEquals(-1, in.read(), "a stateful read at the visible length is the end");
          assertArrayEquals(
              Arrays.copyOfRange(expected, (int) blockStart, expected.length),
              rest,
              "stateful read at round " + round);
          tailBytes += rest.length;
          tailShortCircuit += shortCircuitBytes(in) - before;
          assertEquals(
              0, stream.counters().checksumFallbacks(), "no checksum failure at round " + round);
        }
      }
    }
    assertEquals(0, dfs().cluster().getNamesystem().getCorruptReplicaBlocks());
    double share = (double) tailShortCircuit / tailBytes;
    System.out.printf(
        "%s: %d of %d bytes of the block being written read short-circuit (%.1f %%)%n",
        dfs().mode(), tailShortCircuit, tailBytes, 100 * share);
    assertTrue(tailShortCircuit > 0, "no byte of the block being written was short-circuit");
    assertTrue(share >= 0.95, "short-circuit share of the tail " + share);
  }

  /**
   * The writer extends the partial last chunk (and the DataNode rewrites its checksum in place)
   * between the reader's data read and its checksum read, on every read attempt (a byte each time,
   * 300 times at most: the chunk stays partial): the bytes returned are the written ones, nothing
   * is reported corrupt, and in mode B they are all short-circuit, the tail chunk verified against
   * the checksum the DataNode holds for the length read (the meta file's checksum is for a longer
   * chunk by then, every time). In mode A, which has only the meta file's checksum, the tail chunk
   * goes stock after its tries: every one met a checksum for a longer chunk.
   */
  @Test
  void lastChecksumRewrittenBetweenDataAndChecksumReads() throws IOException {
    Path path = new Path("/being-written/rewrite-" + dfs().mode());
    byte[] data = new byte[3 * CHUNK + 200];
    new Random(5).nextBytes(data);
    byte[] more = new byte[1];
    new Random(6).nextBytes(more);
    ScrFileSystem fs = scrFileSystem();
    AtomicInteger moves = new AtomicInteger();
    try (FSDataOutputStream out = dfs().fileSystem().create(path)) {
      out.write(data);
      out.hflush();
      try (FSDataInputStream in = fs.open(path)) {
        fs.engine()
            .replicaSource()
            .afterTailDataRead(
                () -> {
                  if (moves.incrementAndGet() <= 300) {
                    try {
                      out.write(more);
                      out.hflush(); // the DataNode rewrites the last checksum in place
                    } catch (IOException e) {
                      throw new IllegalStateException(e);
                    }
                  }
                });
        byte[] got = new byte[data.length];
        try {
          in.readFully(0, got);
        } finally {
          fs.engine().replicaSource().afterTailDataRead(null);
        }
        assertTrue(moves.get() > 0, "the hook ran");
        assertArrayEquals(data, got);
        assertEquals(0, unwrap(in).counters().checksumFallbacks());
        long expected = modeB() ? data.length : 3 * CHUNK;
        assertEquals(expected, shortCircuitBytes(in), "short-circuit bytes");
      }
    }
    assertEquals(0, dfs().cluster().getNamesystem().getCorruptReplicaBlocks());
  }

  /**
   * The block is finalized (the writer closes the file: the replica's files are renamed) while a
   * stream opened before keeps reading: it reads the same bytes, short-circuit, up to the visible
   * length it measured and no further.
   */
  @Test
  void finalizeWhileReading() throws IOException {
    Path path = new Path("/being-written/finalize-" + dfs().mode());
    byte[] data = new byte[BLOCK + 5 * CHUNK + 7];
    new Random(7).nextBytes(data);
    ScrFileSystem fs = scrFileSystem();
    FSDataOutputStream out = dfs().fileSystem().create(path);
    out.write(data, 0, BLOCK + 2 * CHUNK);
    out.hflush();
    try (FSDataInputStream in = fs.open(path)) {
      byte[] first = new byte[CHUNK];
      in.readFully(BLOCK, first);
      long before = shortCircuitBytes(in);
      assertEquals(CHUNK, shortCircuitBytes(in), "a chunk of the block being written");
      out.write(data, BLOCK + 2 * CHUNK, data.length - BLOCK - 2 * CHUNK);
      out.close(); // finalize: rbw/ to finalized/
      byte[] got = new byte[2 * CHUNK];
      in.readFully(BLOCK, got);
      assertArrayEquals(Arrays.copyOfRange(data, BLOCK, BLOCK + 2 * CHUNK), got);
      assertEquals(2 * CHUNK, shortCircuitBytes(in) - before, "read short-circuit after finalize");
      assertEquals(
          -1, in.read(BLOCK + 2 * CHUNK, new byte[1], 0, 1), "not past its visible length");
    }
    try (FSDataInputStream in = fs.open(path)) {
      byte[] all = new byte[data.length];
      in.readFully(0, all);
      assertArrayEquals(data, all);
      assertEquals(data.length, shortCircuitBytes(in));
    }
  }

  /**
   * A stream that read to the end of an open file reads on, on the same stream, once the writer
   * hflushed more: its stateful read at the end learns the block's new visible length from the
   * local DataNode and returns exactly the new bytes, all short-circuit, and nothing past them.
   */
  @Test
  void streamAtTheEndReadsNewlyFlushedBytesShortCircuit() throws IOException {
    Path path = new Path("/being-written/at-end-" + dfs().mode());
    byte[] first = new byte[3 * CHUNK + 100];
    byte[] second = new byte[5 * CHUNK + 37];
    new Random(11).nextBytes(first);
    new Random(12).nextBytes(second);
    ScrFileSystem fs = scrFileSystem();
    try (FSDataOutputStream out = dfs().fileSystem().create(path)) {
      out.write(first);
      out.hflush();
      try (FSDataInputStream in = fs.open(path)) {
        byte[] got = new byte[first.length];
        in.readFully(got);
        assertArrayEquals(first, got);
        assertEquals(-1, in.read(), "the end of what the writer flushed");
        out.write(second);
        out.hflush();
        long before = shortCircuitBytes(in);
        byte[] more = new byte[second.length + 100];
        int n = 0;
        int r;
        while ((r = in.read(more, n, more.length - n)) > 0) {
          n += r;
        }
        assertEquals(second.length, n, "the newly flushed bytes and no more");
        assertArrayEquals(second, Arrays.copyOf(more, n));
        assertEquals(first.length + second.length, in.getPos());
        assertEquals(first.length + second.length, unwrap(in).getFileLength());
        assertEquals(second.length, shortCircuitBytes(in) - before, "short-circuit bytes read on");
        assertEquals(-1, in.read(), "nothing past what the DataNode reports visible");
        assertEquals(0, unwrap(in).counters().checksumFallbacks());
      }
    }
    assertEquals(0, dfs().cluster().getNamesystem().getCorruptReplicaBlocks());
  }

  /**
   * A tailing reader as HBase's WAL reader is (open, seek to where it stopped, read to the end,
   * close, again) after each hflush: every new stream measures the visible length of the block
   * being written, and with the scr shim (mode B) it asks the local DataNode's memory over the UNIX
   * socket, so the DataNode serves no {@code getReplicaVisibleLength} RPC; a stock DataNode (mode
   * A) is asked that RPC once per open, as by stock, but over one kept connection where stock opens
   * one per call. Either way the replica opened by the first stream serves every later one (no
   * replica opened again) and the records are read short-circuit and equal to what was written.
   */
  @Test
  void reopeningTailReaderKeepsItsReplicaAndAsksNoDataNodeOverTcpInModeB() throws IOException {
    Path path = new Path("/being-written/reopen-" + dfs().mode());
    Random random = new Random(13);
    ScrFileSystem fs = scrFileSystem();
    org.apache.hadoop.hdfs.server.datanode.DataNode dn = dfs().cluster().getDataNodes().get(0);
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    int rounds = 30;
    long position = 0;
    long tailBytes = 0;
    long tailShortCircuit = 0;
    long rpcBefore = 0;
    long connectionsBefore = 0;
    long loadsBefore = 0;
    long stateRequestsBefore = 0;
    try (FSDataOutputStream out = dfs().fileSystem().create(path)) {
      for (int round = 0; round < rounds; round++) {
        byte[] record = new byte[1 + random.nextInt(3000)];
        random.nextBytes(record);
        out.write(record);
        written.write(record);
        out.hflush();
        if (round == 1) {
          // From the second reopen on: the first stream opened the replica.
          rpcBefore = DataNodeRpcCalls.served(dn, "getReplicaVisibleLength");
          connectionsBefore = DataNodeRpcCalls.connections(dn);
          loadsBefore = fs.engine().cacheStats().loadSuccessCount();
          stateRequestsBefore = fs.engine().metricsSnapshot().tailStateRequests();
        }
        try (FSDataInputStream in = fs.open(path)) {
          in.seek(position);
          byte[] buf = new byte[8192];
          long before = shortCircuitBytes(in);
          int n;
          ByteArrayOutputStream got = new ByteArrayOutputStream();
          while ((n = in.read(buf)) > 0) {
            got.write(buf, 0, n);
          }
          byte[] expected = written.toByteArray();
          assertArrayEquals(
              Arrays.copyOfRange(expected, (int) position, expected.length),
              got.toByteArray(),
              "round " + round);
          position = expected.length;
          if (round >= 1) {
            tailBytes += got.size();
            tailShortCircuit += shortCircuitBytes(in) - before;
          }
        }
      }
    }
    long rpcs = DataNodeRpcCalls.served(dn, "getReplicaVisibleLength") - rpcBefore;
    long connections = DataNodeRpcCalls.connections(dn) - connectionsBefore;
    long loads = fs.engine().cacheStats().loadSuccessCount() - loadsBefore;
    long stateRequests = fs.engine().metricsSnapshot().tailStateRequests() - stateRequestsBefore;
    System.out.printf(
        "%s: %d reopens, %d getReplicaVisibleLength RPCs, %d REPLICA_STATE requests, %d replicas"
            + " opened, %d IPC connections, %d of %d bytes short-circuit%n",
        dfs().mode(),
        rounds - 1,
        rpcs,
        stateRequests,
        loads,
        connections,
        tailShortCircuit,
        tailBytes);
    assertEquals(modeB() ? 0 : rounds - 1, rpcs, "getReplicaVisibleLength RPCs served");
    // Mode A: the RPC rides one kept connection (stock opens and authenticates one per call).
    assertTrue(connections <= 1, "IPC connections the DataNode accepted: " + connections);
    // Mode B: the open's answer also verifies the tail chunk the stream then reads.
    assertEquals(
        modeB() ? rounds - 1 : 0, stateRequests, "REPLICA_STATE requests (TailStateRequests)");
    assertEquals(0, loads, "replicas opened again after the first stream");
    assertEquals(tailBytes, tailShortCircuit, "short-circuit bytes");
  }
}
