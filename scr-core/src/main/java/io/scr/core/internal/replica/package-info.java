/**
 * Open local replicas and their lifecycle: the replica (data and meta files plus the DataNode's
 * shared-memory slot), the per-DataNode slot supply (segments over op 89, releases over op 88), and
 * the manager that leases cached replicas and opens them on a miss.
 */
package io.scr.core.internal.replica;
