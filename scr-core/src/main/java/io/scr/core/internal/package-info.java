/**
 * scr-core's internals, public only so that its other packages can reach them: the engine ({@code
 * engine}), the replica layer ({@code replica}), DataNode health ({@code health}), the DataNode
 * sockets ({@code net}), the short-circuit protocol ({@code protocol}) and the block reader ({@code
 * read}), each using only those after it in that list. Not an API: anything here may change in any
 * release; users go through the types the root package lists.
 */
package io.scr.core.internal;
