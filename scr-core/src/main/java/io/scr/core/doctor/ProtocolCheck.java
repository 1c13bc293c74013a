package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import io.scr.core.internal.net.DomainConnectException;
import io.scr.core.internal.net.DomainSocketPool;
import io.scr.core.internal.net.ShortCircuitExchanges;
import io.scr.core.internal.net.ShortCircuitRefusedException;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Each existing socket answers and speaks the short-circuit protocol, and fd passing works end to
 * end: op 89 (REQUEST_SHORT_CIRCUIT_SHM) must come back SUCCESS with one fd attached. The fd and
 * the connection are closed at once, which frees the segment on the DataNode.
 */
final class ProtocolCheck implements Check {
  static final String ID = "protocol";

  @Override
  public String id() {
    return ID;
  }

  @Override
  public List<Finding> run(DoctorContext ctx) {
    List<Finding> out = new ArrayList<>();
    DomainSocketPool pool =
        DomainSocketPool.newBuilder().connectTimeoutMs(2000).readTimeoutMs(5000).build();
    try {
      for (String template : SocketPaths.templates(ctx.conf())) {
        for (String path : SocketPaths.existing(template, ctx.conf())) {
          out.add(probe(pool, path));
        }
      }
    } finally {
      pool.close();
    }
    if (out.isEmpty()) {
      out.add(
          Finding.warn(
              ID, "no socket to talk to (see socket-path)", "fix the socket-path findings first"));
    }
    return out;
  }

  private static Finding probe(DomainSocketPool pool, String path) {
    ShortCircuitExchanges.ShmGrant grant;
    try {
      grant = ShortCircuitExchanges.requestShm(pool, path, "scr_doctor");
    } catch (DomainConnectException e) {
      return Finding.fail(
          ID,
          "cannot connect to " + path + ": " + e.getMessage(),
          "check that the DataNode is running and that this user may enter the socket's"
              + " directory (x permission on every parent)");
    } catch (ShortCircuitRefusedException e) {
      return Finding.warn(
          ID,
          path
              + " speaks the protocol but refused a shared-memory segment ("
              + e.getMessage()
              + "); reads still work, without slot-based invalidation: replicas go stale by age"
              + " ("
              + ScrKeys.REPLICA_STALE_THRESHOLD_MS.name()
              + ") and a deleted replica's fds stay open that long",
          "on the DataNode, give segments a writable directory with room (a missing, read-only"
              + " or full one fails; its log names the cause): a stock DataNode uses the first of"
              + " dfs.datanode.shared.file.descriptor.paths (default /dev/shm,/tmp) that worked"
              + " when it started, so restart it after the fix; the scr shim uses memfd"
              + " (scr.shim.shm.memfd=true, the default) or else scr.shim.shm.dir");
    } catch (IOException e) {
      return Finding.fail(
          ID,
          path + " did not answer op 89 as a DataNode would: " + e,
          "make sure the path belongs to a DataNode (stock with"
              + " "
              + ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name()
              + "=true and libhadoop, or the scr shim plugin)");
    }
    try {
      boolean fdArrived = grant.fd() != null && grant.fd().valid();
      if (!fdArrived) {
        return Finding.fail(
            ID,
            path + " granted a segment but no fd arrived",
            "fd passing is broken: check the DataNode log; containers must share the socket"
                + " directory, not proxy it");
      }
      return Finding.ok(
          ID,
          path + " answers op 89 with SUCCESS and passed an fd (segment " + grant.shmId() + ")");
    } finally {
      try {
        if (grant.fd() != null && grant.fd().valid()) {
          new FileInputStream(grant.fd()).close();
        }
      } catch (IOException ignored) {
        // closing our copy only
      }
      grant.connection().close();
    }
  }
}
