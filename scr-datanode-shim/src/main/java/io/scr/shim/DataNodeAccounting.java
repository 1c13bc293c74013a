package io.scr.shim;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records each fd request in the DataNode's own books exactly where a stock DataNode does, so
 * dashboards and log greps written for stock short-circuit reads keep working with the shim:
 *
 * <ul>
 *   <li>{@code BlocksGetLocalPathInfo} (DataNode metrics) when the replica files are about to be
 *       opened (stock: {@code requestShortCircuitFdsForRead});
 *   <li>{@code ReadBlockOp} latency and {@code ReadsFromLocalClient}/{@code BytesRead} after a
 *       successful hand-over (stock: {@code DataXceiver.requestShortCircuitFds});
 *   <li>the client-trace line {@code src: 127.0.0.1, dest: 127.0.0.1, op:
 *       REQUEST_SHORT_CIRCUIT_FDS, blockid: N, srvID: UUID, success: true|false} at INFO on the
 *       logger {@code org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace}, once per
 *       request that passed the token check; likewise stock's lines for {@code
 *       REQUEST_SHORT_CIRCUIT_SHM} (op 89) and {@code RELEASE_SHORT_CIRCUIT_FDS} (op 88), once per
 *       request.
 * </ul>
 *
 * <p>Thread-safe: DataNodeMetrics' counters are thread-safe; this class holds no state of its own.
 */
final class DataNodeAccounting {
  static final Logger CLIENT_TRACE =
      LoggerFactory.getLogger(DataNode.class.getName() + ".clienttrace");

  /** A stock DataNode's format for this op, byte for byte. */
  static final String TRACE_FORMAT =
      "src: 127.0.0.1, dest: 127.0.0.1, op: REQUEST_SHORT_CIRCUIT_FDS,"
          + " blockid: %s, srvID: %s, success: %b";

  /** Books nothing: for tests that run the service without a DataNode. */
  static final DataNodeAccounting NONE = new DataNodeAccounting(null, Ticker.SYSTEM);

  private final DataNode dn;
  private final Ticker ticker;

  DataNodeAccounting(DataNode dn, Ticker ticker) {
    this.ticker = ticker;
    this.dn = dn;
  }

  /** The replica files of a request are about to be opened. */
  void fdRequestOpening() {
    DataNodeMetrics m = metrics();
    if (m != null) {
      m.incrBlocksGetLocalPathInfo();
    }
  }

  /** A request that passed the token check ended; {@code success}: fds handed over (receipted). */
  void fdRequestDone(ExtendedBlock blk, boolean success, long startNanos) {
    if (dn == null) {
      return;
    }
    DataNodeMetrics m = metrics();
    if (success && m != null) {
      m.addReadBlockOp(TimeUnit.NANOSECONDS.toMillis(ticker.read() - startNanos));
      m.incrReadsFromClient(true, blk.getNumBytes());
    }
    if (CLIENT_TRACE.isInfoEnabled()) {
      CLIENT_TRACE.info(
          String.format(TRACE_FORMAT, blk.getBlockId(), serverId(blk.getBlockPoolId()), success));
    }
  }

  /** Stock's op-89 trace formats ({@code DataXceiver.requestShortCircuitShm}), byte for byte. */
  static final String SHM_TRACE_FORMAT =
      "cliID: %s, src: 127.0.0.1, dest: 127.0.0.1, op: REQUEST_SHORT_CIRCUIT_SHM,"
          + " shmId: %016x%016x, srvID: %s, success: true";

  static final String SHM_FAILED_TRACE_FORMAT =
      "cliID: %s, src: 127.0.0.1, dest: 127.0.0.1, op: REQUEST_SHORT_CIRCUIT_SHM,"
          + " shmId: n/a, srvID: %s, success: false";

  /** Stock's op-88 trace format ({@code DataXceiver.releaseShortCircuitFds}), byte for byte. */
  static final String RELEASE_TRACE_FORMAT =
      "src: 127.0.0.1, dest: 127.0.0.1, op: RELEASE_SHORT_CIRCUIT_FDS,"
          + " shmId: %016x%016x, slotIdx: %d, srvID: %s, success: %b";

  /**
   * A shared-memory request ended: {@code shmId} (hi, lo) handed over, or null when it failed. As
   * stock, one client-trace line per request.
   */
  void shmRequestDone(String clientName, long[] shmId, boolean success) {
    if (dn == null || !CLIENT_TRACE.isInfoEnabled()) {
      return;
    }
    String srvId = dn.getDatanodeUuid();
    CLIENT_TRACE.info(
        success && shmId != null
            ? String.format(SHM_TRACE_FORMAT, clientName, shmId[0], shmId[1], srvId)
            : String.format(SHM_FAILED_TRACE_FORMAT, clientName, srvId));
  }

  /**
   * A slot release (op 88) was answered ({@code success}: the answer was written, whatever its
   * status, as stock counts it). One client-trace line per release, as stock.
   */
  void slotReleaseDone(long shmHi, long shmLo, int slotIdx, boolean success) {
    if (dn == null || !CLIENT_TRACE.isInfoEnabled()) {
      return;
    }
    CLIENT_TRACE.info(
        String.format(RELEASE_TRACE_FORMAT, shmHi, shmLo, slotIdx, dn.getDatanodeUuid(), success));
  }

  private DataNodeMetrics metrics() {
    return dn == null ? null : dn.getMetrics();
  }

  private String serverId(String bpid) {
    try {
      return dn.getDNRegistrationForBP(bpid).getDatanodeUuid();
    } catch (IOException e) {
      return dn.getDatanodeUuid(); // block pool not registered: the DataNode's own uuid
    }
  }
}
