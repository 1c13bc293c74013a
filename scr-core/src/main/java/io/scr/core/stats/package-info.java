/**
 * The figures scr-core's parts record and its metrics read: the counters the read path bumps
 * ({@link io.scr.core.stats.ClientCounters}, {@link io.scr.core.stats.PathCounters}), and the
 * immutable status of each DataNode socket ({@link io.scr.core.stats.HealthStatus} in a {@link
 * io.scr.core.stats.HealthState}, {@link io.scr.core.stats.BackoffStatus} per {@link
 * io.scr.core.stats.FailureClass}). A leaf: it uses nothing of scr-core, so the internals write
 * here without depending on {@code io.scr.core.metrics}, which reads it. Public because {@link
 * io.scr.core.metrics.ClientSnapshot} returns these types.
 */
package io.scr.core.stats;
