/**
 * Observability of the scr client: the hot-path counters the data plane bumps ({@link
 * io.scr.core.stats.ClientCounters}, {@link io.scr.core.stats.PathCounters}: LongAdder increments
 * only), the Hadoop metrics2 source that publishes them with the cache, slot-pool, socket-pool and
 * backoff state of one client context ({@link io.scr.core.metrics.ScrClientMetrics}, so JMX and
 * every configured sink see them), and the periodic one-line INFO summary ({@link
 * io.scr.core.metrics.SummaryReporter}). Metric names and units are listed in {@code
 * docs/metrics.md}.
 */
package io.scr.core.metrics;
