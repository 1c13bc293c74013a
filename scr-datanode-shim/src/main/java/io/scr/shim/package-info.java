/**
 * scr-datanode-shim: a DataNode plugin ({@link io.scr.shim.ScrShimPlugin}) that serves HDFS
 * short-circuit reads over a Netty epoll UNIX socket, byte-compatible with a stock DataNode for ops
 * 87 (REQUEST_SHORT_CIRCUIT_FDS), 88 (RELEASE_SHORT_CIRCUIT_FDS) and 89
 * (REQUEST_SHORT_CIRCUIT_SHM), without libhadoop.
 *
 * <p>Place in the architecture: the DataNode side of deployment modes B (scr client) and C (stock
 * client with libhadoop). It depends on scr-shm for creator-side segments (memfd or deleted files
 * in /dev/shm, the stock slot layout) and on the DataNode's {@code FsDatasetSpi} for replica files.
 * Public surface: the plugin, its key catalogue {@link io.scr.shim.ScrShimKeys} and its metric
 * catalogue {@link io.scr.shim.ShimMetric}; everything else is package-private (the benchmarks
 * reach the invalidation scan through a fixture in the module's test-jar, not through this jar).
 * Operator documentation: {@code docs/shim.md}; metrics: {@code docs/metrics.md}.
 */
package io.scr.shim;
