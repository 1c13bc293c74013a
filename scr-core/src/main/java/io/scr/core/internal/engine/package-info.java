/**
 * The engine: what one client context shares, built from its configuration and closed with its last
 * reference. {@link io.scr.core.internal.engine.Engine} holds the parts; {@link
 * io.scr.core.internal.engine.EngineRegistry} keeps one engine per context with its reference
 * count; {@link io.scr.core.internal.engine.EngineWiring} reads and checks the keys and builds the
 * backoff, the socket pool, the replica layer and the prefetch threads, with {@link
 * io.scr.core.internal.engine.EngineSettings} (the keys it was built from, to name differences of
 * later acquires). The parts it adds to the replica layer: {@link
 * io.scr.core.internal.engine.LocalSockets} (which socket reaches which local DataNode), {@link
 * io.scr.core.internal.engine.AccessorLeases} (leases by block alone, for the replica accessor)
 * with {@link io.scr.core.internal.engine.DataNodeHints} and {@link
 * io.scr.core.internal.engine.CorruptReplicas}, {@link
 * io.scr.core.internal.engine.PrefetchThreads}, {@link
 * io.scr.core.internal.engine.FallbackCounters} with {@link
 * io.scr.core.internal.engine.FdBudgetWarning}, and {@link
 * io.scr.core.internal.engine.EngineObservability} (the metrics source, the MBean, the summary
 * line). {@link io.scr.core.internal.engine.EngineSeams} are the points where tests hold an
 * engine's threads.
 *
 * <p>Used by the drop-ins ({@code io.scr.core.hdfs}) and the {@link io.scr.core.ScrClient} facade;
 * uses {@code io.scr.core.metrics} and everything below it.
 */
package io.scr.core.internal.engine;
