package io.scr.core.internal.engine;

import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * Points inside an engine where a test holds one of its threads to drive a race the same way on
 * every run: a reader between its miss checks and its load, a prefetch task before it opens a
 * block. An engine gets its seams when it is built and keeps them; production engines ({@link
 * io.scr.core.internal.engine.Engine#acquire}) have {@link #NONE}, whose methods do nothing. Not
 * part of the user API.
 *
 * <p>Thread-safety: each method is called on the thread that stands at the point, possibly on many
 * threads at once; an implementation that blocks holds exactly that thread.
 */
public interface EngineSeams {
  /** Seams that do nothing: every engine built from a configuration alone has them. */
  EngineSeams NONE = new EngineSeams() {};

  /**
   * A reader's miss consulted the backoff and the absent-replica memory for {@code block} and is
   * about to load it (the window a racing prefetch can fill).
   */
  default void afterMissChecked(ExtendedBlock block) {}

  /**
   * A prefetch on open is about to open {@code block} (the first of a batch when it opens several
   * in one exchange); the stream's close is checked again after this returns.
   */
  default void beforePrefetchOpen(LocatedBlock block) {}
}
