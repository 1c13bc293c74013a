/**
 * scr-core's internals, public only so that its other packages can reach them: the replica layer
 * ({@code replica}), the block reader ({@code read}), the DataNode sockets ({@code net}), the
 * short-circuit protocol ({@code protocol}), DataNode health ({@code health}) and the engine's test
 * seams. Not an API: anything here may change in any release; users go through the types the root
 * package lists.
 */
package io.scr.core.internal;
