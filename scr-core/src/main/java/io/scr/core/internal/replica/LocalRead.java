package io.scr.core.internal.replica;

import io.scr.core.ReplicaLease;
import io.scr.core.internal.read.ReadContext;
import io.scr.core.internal.read.ReadContext.Stop;
import io.scr.core.internal.read.TailNotReadyException;
import io.scr.shm.internal.Interrupts;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;

/**
 * The one local read: leases the replica of a block from one local DataNode, reads a range of it,
 * leases again once when its channel was closed under the read, and gives the lease back. Both
 * drop-ins read local replicas only through it: {@code ScrInputStream} for every block of every
 * file, the replica accessor for the blocks stock hands it. A finalized replica is read to its end
 * ({@link ReplicaLease#read}); the block being written up to the reader's end, never past it
 * ({@link TailReads#read}). Zero-copy reads keep a lease of their own instead (a buffer outlives
 * the call).
 *
 * <p><b>How a read ends</b> is left in the thread's {@link ReadContext} ({@link
 * ReadContext#stop()}, the failure and the replica's socket) for the caller to decide what it
 * means: the stream demotes the block or reports a corrupt replica, the accessor hands the block to
 * stock. The reading thread's own interrupt is thrown (stock's rule), never recorded.
 *
 * <p>Thread-safety: thread-safe and stateless; all state is the caller's context. A cache hit
 * allocates nothing, takes no lock and does no I/O beyond the read.
 */
public final class LocalRead {
  private final ReplicaSource source;

  public LocalRead(ReplicaSource source) {
    this.source = source;
  }

  /**
   * Reads up to {@code dst.remaining()} bytes at {@code blockOffset} of {@code block}'s replica on
   * the DataNode at {@code socketPath}, advancing {@code dst}'s position by the count returned.
   *
   * @param context the calling thread's {@link ReplicaSource#readContext()}; says afterwards how
   *     the read ended
   * @param fileName the HDFS file, for error messages; null when unknown
   * @param readEnd for the block being written, the reader's end of it (its visible length or less:
   *     no byte at or past it is read); -1 for a finalized block
   * @return bytes read, or -1 when none (the caller reads the range the stock way)
   * @throws java.io.InterruptedIOException or {@code ClosedByInterruptException} on the calling
   *     thread's own interrupt
   */
  public int read(
      ReadContext context,
      ExtendedBlock block,
      Token<BlockTokenIdentifier> token,
      String socketPath,
      String fileName,
      long readEnd,
      long blockOffset,
      ByteBuffer dst,
      boolean verifyChecksum)
      throws IOException {
    context.startRead();
    int start = dst.position();
    int len = dst.remaining();
    int done = 0;
    for (int attempt = 0; ; attempt++) {
      ReplicaLease lease;
      try {
        lease = source.lease(context, block, token, socketPath, fileName, readEnd >= 0);
      } catch (InvalidToken e) {
        context.stopped(Stop.BAD_TOKEN, e, socketPath);
        break;
      } catch (IOException e) {
        if (Interrupts.isOwnInterrupt(e)) {
          throw e;
        }
        context.stopped(Stop.NO_LEASE, e, socketPath);
        break;
      }
      if (lease == null) {
        context.stopped(Stop.NO_LEASE, null, socketPath);
        break;
      }
      try {
        while (done < len) {
          long offset = blockOffset + done;
          int n =
              readEnd < 0
                  ? lease.read(offset, dst, verifyChecksum)
                  : source
                      .tailReads()
                      .read(lease, block, token, offset, dst, readEnd, verifyChecksum, context);
          if (n <= 0) {
            break; // the replica ends before the range: the stock path decides about the rest
          }
          done += n;
        }
        break;
      } catch (TailNotReadyException e) {
        dst.position(start + done);
        context.stopped(Stop.NOT_READY, e, lease.socketPath());
        break;
      } catch (ChecksumException e) {
        dst.position(start + done); // the bytes before the bad chunk were verified
        context.stopped(Stop.CORRUPT, e, lease.socketPath());
        break;
      } catch (IOException e) {
        dst.position(start + done);
        if (Interrupts.isOwnInterrupt(e)) {
          throw e;
        }
        if (e instanceof ClosedChannelException && attempt == 0) {
          // Closed under the read by someone else's interrupt: the cache replaced the replica.
          context.reopened();
          continue;
        }
        context.stopped(Stop.FAILED, e, lease.socketPath());
        break;
      } finally {
        source.release(context, lease);
      }
    }
    return done > 0 ? done : -1;
  }
}
