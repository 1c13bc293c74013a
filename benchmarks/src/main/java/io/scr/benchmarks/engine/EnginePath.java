package io.scr.benchmarks.engine;

import io.scr.core.ReplicaLease;
import io.scr.core.ScrClient;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * The ways {@link EngineReadBenchmark} reads 4 KiB at a block offset, behind one adapter: the raw
 * block file (the physical limit, with and without checksums done by hand) and the scr engine's
 * lease path, with and without checksum verification.
 */
public enum EnginePath {
  /** {@code FileChannel} pread of the block file: no checksums, no engine. */
  RAW_PREAD {
    @Override
    Reader open(EngineReadBenchmark.Fixture f) throws IOException {
      return new RawReader(f, false);
    }
  },
  /**
   * Raw pread of the covering chunks plus a pread of their checksums and CRC32C, by hand: the
   * physical limit of a verified read.
   */
  RAW_PREAD_CRC {
    @Override
    Reader open(EngineReadBenchmark.Fixture f) throws IOException {
      return new RawReader(f, true);
    }
  },
  /**
   * {@link ScrClient}: per read, lease (reopening the reader's spare lease, as ScrFileSystem keeps
   * one per thread), read with checksums verified, close.
   */
  SCR_CLIENT_LEASE_READ {
    @Override
    Reader open(EngineReadBenchmark.Fixture f) {
      return new LeaseReader(f, true, true);
    }
  },
  /** As {@link #SCR_CLIENT_LEASE_READ}, checksums off (HBase verifies its own). */
  SCR_CLIENT_LEASE_READ_NO_CHECKSUM {
    @Override
    Reader open(EngineReadBenchmark.Fixture f) {
      return new LeaseReader(f, false, true);
    }
  },
  /**
   * As {@link #SCR_CLIENT_LEASE_READ} with a new lease object per read ({@code lease(block, token,
   * path, file)}, what the replica accessor does once per block reader).
   */
  SCR_CLIENT_NEW_LEASE_READ {
    @Override
    Reader open(EngineReadBenchmark.Fixture f) {
      return new LeaseReader(f, true, false);
    }
  };

  abstract Reader open(EngineReadBenchmark.Fixture f) throws IOException;

  /** Reads {@code buf.length} bytes at a file offset; closes what it opened. */
  interface Reader extends AutoCloseable {
    void readFully(long pos, byte[] buf) throws IOException;

    @Override
    void close() throws IOException;
  }

  /** The engine: one lease per read, as ScrFileSystem does. */
  private static final class LeaseReader implements Reader {
    private final EngineReadBenchmark.Fixture f;
    private final boolean verify;
    private final boolean reuse;
    private ReplicaLease spare;

    LeaseReader(EngineReadBenchmark.Fixture f, boolean verify, boolean reuse) {
      this.f = f;
      this.verify = verify;
      this.reuse = reuse;
    }

    @Override
    public void readFully(long pos, byte[] buf) throws IOException {
      int i = (int) (pos / f.blockSize);
      LocatedBlock lb = f.blocks.get(i);
      long off = pos - (long) i * f.blockSize;
      ReplicaLease lease =
          reuse
              ? f.client.lease(lb.getBlock(), lb.getBlockToken(), f.socketPath, f.file, spare)
              : f.client.lease(lb.getBlock(), lb.getBlockToken(), f.socketPath, f.file);
      if (lease == null) {
        throw new IOException("no lease for " + lb.getBlock());
      }
      spare = reuse ? lease : null;
      try {
        int done = 0;
        while (done < buf.length) {
          int n = lease.read(off + done, buf, done, buf.length - done, verify);
          if (n <= 0) {
            throw new IOException("replica ended early");
          }
          done += n;
        }
      } finally {
        lease.close();
      }
    }

    @Override
    public void close() {}
  }

  /** The block files themselves, opened once. */
  private static final class RawReader implements Reader {
    private static final int BPC = 512;
    private final FileChannel[] data;
    private final FileChannel[] meta;
    private final long blockSize;
    private final boolean crc;
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(64 << 10);
    private final ByteBuffer sums = ByteBuffer.allocateDirect(4096);
    private final CRC32C crc32c = new CRC32C();
    private byte[] wrappedArray;
    private ByteBuffer wrapped;

    RawReader(EngineReadBenchmark.Fixture f, boolean crc) throws IOException {
      List<LocatedBlock> blocks = f.blocks;
      this.blockSize = f.blockSize;
      this.crc = crc;
      data = new FileChannel[blocks.size()];
      meta = new FileChannel[blocks.size()];
      for (int i = 0; i < data.length; i++) {
        File file = f.dfs.cluster().getBlockFile(0, blocks.get(i).getBlock());
        if (file == null) {
          throw new IOException("no block file for " + blocks.get(i).getBlock());
        }
        data[i] = FileChannel.open(file.toPath(), StandardOpenOption.READ);
        File metaFile = metaFileOf(file);
        meta[i] = FileChannel.open(metaFile.toPath(), StandardOpenOption.READ);
      }
    }

    private static File metaFileOf(File blockFile) throws IOException {
      File[] candidates =
          blockFile
              .getParentFile()
              .listFiles((d, n) -> n.startsWith(blockFile.getName() + "_") && n.endsWith(".meta"));
      if (candidates == null || candidates.length != 1) {
        throw new IOException("no unique meta file next to " + blockFile);
      }
      return candidates[0];
    }

    @Override
    public void readFully(long pos, byte[] buf) throws IOException {
      int i = (int) (pos / blockSize);
      long off = pos - i * blockSize;
      if (!crc) {
        if (wrappedArray != buf) { // wrap once per buffer: the raw path must not allocate
          wrappedArray = buf;
          wrapped = ByteBuffer.wrap(buf);
        }
        ByteBuffer b = wrapped;
        b.clear();
        while (b.hasRemaining()) {
          if (data[i].read(b, off + b.position()) < 0) {
            throw new IOException("block file shorter than expected");
          }
        }
        return;
      }
      long start = off - off % BPC;
      long end = Math.min(((off + buf.length + BPC - 1) / BPC) * BPC, blockSize);
      int span = (int) (end - start);
      scratch.clear().limit(span);
      while (scratch.hasRemaining()) {
        if (data[i].read(scratch, start + scratch.position()) < 0) {
          throw new IOException("block file shorter than expected");
        }
      }
      int chunks = (span + BPC - 1) / BPC;
      sums.clear().limit(chunks * 4);
      while (sums.hasRemaining()) {
        if (meta[i].read(sums, 7 + (start / BPC) * 4 + sums.position()) < 0) {
          throw new IOException("meta file shorter than expected");
        }
      }
      for (int c = 0; c < chunks; c++) {
        int from = c * BPC;
        scratch.limit(Math.min(from + BPC, span)).position(from);
        crc32c.reset();
        crc32c.update(scratch);
        if ((int) crc32c.getValue() != sums.getInt(c * 4)) {
          throw new IOException("checksum mismatch at " + (start + from));
        }
      }
      scratch.limit(span).position((int) (off - start));
      scratch.get(buf, 0, buf.length);
    }

    @Override
    public void close() throws IOException {
      for (FileChannel ch : data) {
        ch.close();
      }
      for (FileChannel ch : meta) {
        ch.close();
      }
    }
  }
}
