/**
 * The scr client. Its public API, the only types a user names:
 *
 * <ul>
 *   <li>{@link io.scr.core.hdfs.ScrFileSystem}: the HDFS file system whose streams read local
 *       replicas short-circuit ({@code fs.hdfs.impl});
 *   <li>{@link io.scr.core.hdfs.ScrReplicaAccessorBuilder}: the same reads behind the stock
 *       client's replica accessor ({@code dfs.client.replica.accessor.builder.classes});
 *   <li>{@link io.scr.core.ScrKeys}: every configuration key, its type, default and meaning;
 *   <li>{@link io.scr.core.doctor.Doctor}: {@code scr doctor}, is short-circuit working here;
 *   <li>{@link io.scr.core.metrics.ScrClientDiagnosticsMBean}: the engine's JMX view;
 *   <li>{@link io.scr.core.ScrClient} (a handle on the engine shared per client context) and {@link
 *       io.scr.core.ReplicaLease} (a leased open replica), with the types their methods return
 *       ({@link io.scr.core.FallbackReason}, {@link io.scr.core.metrics.ClientSnapshot} and the
 *       figures of {@code io.scr.core.stats}), for callers that lease replicas themselves.
 * </ul>
 *
 * <p>Everything under {@code io.scr.core.internal} (the engine, the replica layer, the reader, the
 * sockets, the protocol, DataNode health) is public only so that scr's own packages can reach it:
 * it may change in any release. The layers and what each may use are in docs/architecture.md and
 * are checked by a test.
 */
package io.scr.core;
