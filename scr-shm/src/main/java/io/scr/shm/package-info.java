/**
 * Shared-memory segments in the HDFS slot layout, and the client's preallocated, lock-free slot
 * pool. Hadoop-free: scr-core wires the pool to a DataNode (segment source and release messages
 * over a UNIX socket), scr-datanode-shim creates segments with {@link io.scr.shm.SegmentFactory}.
 *
 * <p>Entry points: {@link io.scr.shm.Segment} and {@link io.scr.shm.Slot} (the shared words and
 * their memory ordering), {@link io.scr.shm.SegmentFactory} (creator side), {@link
 * io.scr.shm.SlotPool} (client side), {@link io.scr.shm.ShmSupport} (the availability probe).
 * Native calls go through {@link io.scr.shm.internal.NativeIo} (jnr-ffi); see docs/shm.md.
 */
package io.scr.shm;
