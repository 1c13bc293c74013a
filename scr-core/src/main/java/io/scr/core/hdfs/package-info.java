/**
 * HDFS integration of scr. {@link io.scr.core.hdfs.ScrFileSystem} ({@code fs.hdfs.impl}) is the
 * fast path: its streams read local finalized blocks directly and hand every other read to the
 * stock {@code DFSInputStream} they extend. The one class scr keeps in {@code
 * org.apache.hadoop.hdfs} ({@code ScrDfsInputStreamBase}) only opens the package-private members
 * that design needs.
 */
package io.scr.core.hdfs;
