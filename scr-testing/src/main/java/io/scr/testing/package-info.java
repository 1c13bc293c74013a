/**
 * Test support shared by every scr module: {@link io.scr.testing.MiniDfs}, an embedded HDFS cluster
 * in one of three {@link io.scr.testing.DataNodeMode}s (TCP, stock short-circuit with libhadoop,
 * the scr shim), its JUnit 5 extension, and {@link io.scr.testing.ResourceSnapshot} for leak
 * checks. Never shipped to a cluster.
 */
package io.scr.testing;
