package org.apache.hadoop.hbase;

import com.codahale.metrics.Snapshot;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

/**
 * Runs HBase's own {@link PerformanceEvaluation} with {@code --nomapred} in this JVM, exactly as
 * its command line does ({@code parseOpts}, {@code checkTable}, {@code doLocalClients}), and keeps
 * the per-client results the command line only logs. It lives in PerformanceEvaluation's package
 * because those methods are package-private.
 *
 * <p>Not thread-safe; one run at a time.
 */
public final class PerformanceEvaluationRun {
  /** One run's figures, all clients together. */
  public static final class Figures {
    /** Operations measured (after {@code measureAfter}), all clients. */
    public final long ops;

    /** Wall time of the slowest client, ms. */
    public final long durationMs;

    /** Latency of one operation, µs (PerformanceEvaluation's own histogram). */
    public final double p50;

    public final double p99;
    public final double p999;
    public final double mean;
    public final double max;

    Figures(long ops, long durationMs, Snapshot s) {
      this.ops = ops;
      this.durationMs = durationMs;
      this.p50 = s.getMedian();
      this.p99 = s.get99thPercentile();
      this.p999 = s.get999thPercentile();
      this.mean = s.getMean();
      this.max = s.getMax();
    }

    /** Operations per second over the slowest client's wall time. */
    public double opsPerSecond() {
      return durationMs == 0 ? 0 : ops * 1000.0 / durationMs;
    }
  }

  private PerformanceEvaluationRun() {}

  /**
   * Runs {@code args} (PerformanceEvaluation's command line: options, command, client count) with
   * {@code conf} as the client configuration.
   *
   * @throws IllegalArgumentException when PerformanceEvaluation does not accept the arguments
   */
  public static Figures run(Configuration conf, List<String> args) throws Exception {
    Queue<String> q = new ArrayDeque<>(args);
    PerformanceEvaluation.TestOptions opts = PerformanceEvaluation.parseOpts(q);
    if (opts == null || opts.getCmdName() == null || !q.isEmpty()) {
      throw new IllegalArgumentException("PerformanceEvaluation does not accept " + args);
    }
    if (!opts.nomapred) {
      throw new IllegalArgumentException("runs in this JVM only: pass --nomapred");
    }
    try (Connection c = ConnectionFactory.createConnection(conf);
        Admin admin = c.getAdmin()) {
      PerformanceEvaluation.checkTable(admin, opts);
    }
    PerformanceEvaluation.RunResult[] results = PerformanceEvaluation.doLocalClients(opts, conf);
    long ops = 0;
    long duration = 0;
    com.codahale.metrics.Histogram all =
        new com.codahale.metrics.Histogram(new com.codahale.metrics.UniformReservoir(1 << 20));
    for (PerformanceEvaluation.RunResult r : results) {
      duration = Math.max(duration, r.duration);
      ops += r.hist.getCount();
      for (long v : r.hist.getSnapshot().getValues()) {
        all.update(v);
      }
    }
    return new Figures(ops, duration, all.getSnapshot());
  }
}
