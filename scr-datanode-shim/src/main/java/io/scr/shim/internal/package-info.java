/**
 * Entry points into scr-datanode-shim internals for benchmarks and tests in other modules (today:
 * the invalidation scan, {@link io.scr.shim.internal.InvalidationScanFixture}). Not API: it may
 * change with the shim, and nothing here is used by a running DataNode.
 */
package io.scr.shim.internal;
