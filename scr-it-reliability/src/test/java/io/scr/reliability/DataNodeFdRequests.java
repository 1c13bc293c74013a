package io.scr.reliability;

import io.scr.shim.ScrShimPlugin;
import io.scr.testing.DataNodeMode;
import io.scr.testing.LogCapture;
import io.scr.testing.MiniDfs;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.log4j.Level;

/**
 * Counts the short-circuit fd requests (op 87, and the shim's batched form) one DataNode received,
 * at the DataNode: a stock DataNode logs one client-trace line per {@code
 * REQUEST_SHORT_CIRCUIT_FDS} whatever its outcome (logger {@code DataNode.clienttrace}, the
 * DataNode's own audit of the op, filtered by its {@code srvID}); the shim counts them in its
 * metrics ({@code requests.request_fds.*}, {@code requests.ext_batch_fds.*}). While open, the
 * client-trace logger is at INFO and does not reach the console. Thread-safe.
 */
final class DataNodeFdRequests implements AutoCloseable {
  static final String CLIENT_TRACE_LOGGER = DataNode.class.getName() + ".clienttrace";

  private final MiniDfs dfs;
  private final int index;

  /** The DataNode's client-trace lines while open (stock DataNodes), else null. */
  private final LogCapture trace;

  /** Names the DataNode counted in its client-trace lines. */
  private final String dataNode;

  private DataNodeFdRequests(MiniDfs dfs, int index) {
    this.dfs = dfs;
    this.index = index;
    if (dfs.mode() == DataNodeMode.SHIM) {
      trace = null;
      dataNode = null;
    } else {
      dataNode = "srvID: " + dfs.cluster().getDataNodes().get(index).getDatanodeUuid();
      trace = LogCapture.divert(CLIENT_TRACE_LOGGER, Level.INFO);
    }
  }

  /** Starts counting the fd requests DataNode {@code index} of {@code dfs} receives. */
  static DataNodeFdRequests of(MiniDfs dfs, int index) {
    return new DataNodeFdRequests(dfs, index);
  }

  /** Fd requests the DataNode received (stock: since {@link #of}; shim: since it started). */
  long count() {
    if (trace != null) {
      return lines().size();
    }
    ScrShimPlugin shim = Faults.shim(dfs, index);
    long n = 0;
    for (Map.Entry<String, Long> e : shim.counters().entrySet()) {
      if (e.getKey().startsWith("requests.request_fds.")
          || e.getKey().startsWith("requests.ext_batch_fds.")) {
        n += e.getValue();
      }
    }
    return n;
  }

  /**
   * Fd requests for the blocks {@code blockIds}: a stock DataNode's lines name the block, so only
   * those count; the shim counts requests, not blocks, so this is {@link #count()} there.
   */
  long countFor(Collection<Long> blockIds) {
    if (trace == null) {
      return count();
    }
    long n = 0;
    for (String line : lines()) {
      for (Long id : blockIds) {
        if (line.contains("blockid: " + id + ",")) {
          n++;
          break;
        }
      }
    }
    return n;
  }

  /** The DataNode's own lines for the counted requests (stock DataNodes), for messages. */
  List<String> lines() {
    if (trace == null) {
      return List.of();
    }
    List<String> lines = new ArrayList<>();
    for (String line : trace.matching("REQUEST_SHORT_CIRCUIT_FDS")) {
      if (line.contains(dataNode)) {
        lines.add(line);
      }
    }
    return lines;
  }

  /** Where the count comes from, for messages. */
  String source() {
    return trace != null
        ? "the stock DataNode's clienttrace log (REQUEST_SHORT_CIRCUIT_FDS)"
        : "the shim's metrics (requests.request_fds.*, requests.ext_batch_fds.*)";
  }

  /**
   * The count once it stopped moving: a stock DataNode logs a request after it answered it, so the
   * last line can trail the client's read by a moment.
   */
  long settledCount() throws InterruptedException {
    long last = count();
    for (int i = 0; i < 50; i++) {
      Thread.sleep(100); // the DataNode logs after replying: no latch to wait on
      long now = count();
      if (now == last) {
        return now;
      }
      last = now;
    }
    return last;
  }

  @Override
  public void close() {
    if (trace != null) {
      trace.close();
    }
  }
}
