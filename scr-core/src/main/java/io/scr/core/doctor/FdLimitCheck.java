package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import java.util.Collections;
import java.util.List;

/**
 * RLIMIT_NOFILE against the cache: every cached replica holds two fds, and the process needs room
 * for its own files (an HBase RegionServer holds thousands of HFiles and WAL streams).
 */
final class FdLimitCheck implements Check {
  static final String ID = "fd-limit";

  /** Below this a RegionServer host is at risk whatever the cache does. */
  static final long LOW_LIMIT = 16384;

  @Override
  public String id() {
    return ID;
  }

  /** The fd budget scr's cache takes from limit {@code l}: max(l/2 - 1024, l/8). */
  static long budget(long l) {
    return Math.max(l / 2 - 1024, l / 8);
  }

  /** The fd budget in effect for limit {@code l}: scr.cache.fd.budget (capped at l) or derived. */
  static long budget(DoctorContext ctx, long l) {
    Long explicit = ScrKeys.CACHE_FD_BUDGET.get(ctx.conf()::get);
    return explicit != null ? Math.min(explicit, l) : budget(l);
  }

  /** The cache capacity in effect for limit {@code l}. */
  static long capacity(DoctorContext ctx, long l) {
    Integer explicit = ScrKeys.CACHE_CAPACITY.get(ctx.conf()::get);
    return explicit != null ? explicit : budget(ctx, l) / 2;
  }

  @Override
  public List<Finding> run(DoctorContext ctx) {
    long limit = ctx.fdLimit();
    if (limit < 0) {
      return Collections.singletonList(
          Finding.warn(
              ID,
              "this JVM cannot tell the fd limit",
              "check ulimit -n of the process that reads (RegionServer, executor) by hand"));
    }
    Integer explicit = ScrKeys.CACHE_CAPACITY.get(ctx.conf()::get);
    long budget = budget(ctx, limit);
    if (explicit != null && 2L * explicit > budget) {
      long need = 2L * (2L * explicit + 1024);
      boolean budgetSet = ScrKeys.CACHE_FD_BUDGET.get(ctx.conf()::get) != null;
      return Collections.singletonList(
          Finding.fail(
              ID,
              ScrKeys.CACHE_CAPACITY.name()
                  + "="
                  + explicit
                  + " needs "
                  + 2L * explicit
                  + " fds, but "
                  + (budgetSet
                      ? ScrKeys.CACHE_FD_BUDGET.name() + " (with RLIMIT_NOFILE " + limit + ") gives"
                      : "RLIMIT_NOFILE " + limit + " leaves")
                  + " the cache "
                  + budget
                  + " (the rest is for the process's own files): the cache will be cut to "
                  + budget / 2
                  + " replicas and fd exhaustion can crash the process",
              budgetSet
                  ? "raise "
                      + ScrKeys.CACHE_FD_BUDGET.name()
                      + " to "
                      + 2L * explicit
                      + " (and the fd limit to at least "
                      + need
                      + ") or lower "
                      + ScrKeys.CACHE_CAPACITY.name()
                      + " to "
                      + budget / 2
                  : "raise the fd limit to at least "
                      + need
                      + " (ulimit -n; limits.conf nofile; systemd LimitNOFILE) or lower"
                      + " "
                      + ScrKeys.CACHE_CAPACITY.name()
                      + " to "
                      + budget / 2));
    }
    if (limit < LOW_LIMIT) {
      return Collections.singletonList(
          Finding.warn(
              ID,
              "RLIMIT_NOFILE is "
                  + limit
                  + ": low for a process next to a DataNode (HBase RegionServers and DataNodes"
                  + " crash or abort WAL rolls when they run out of fds); the scr cache gets "
                  + budget
                  + " fds, "
                  + capacity(ctx, limit)
                  + " replicas",
              "raise the fd limit to 32768 or more for the HDFS and HBase users"));
    }
    return Collections.singletonList(
        Finding.ok(
            ID,
            "RLIMIT_NOFILE "
                + limit
                + "; cache capacity "
                + capacity(ctx, limit)
                + " replicas within an fd budget of "
                + budget));
  }
}
