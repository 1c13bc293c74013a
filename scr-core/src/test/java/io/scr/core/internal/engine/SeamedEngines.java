package io.scr.core.internal.engine;

import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;

/**
 * Engines whose threads a test can hold ({@link EngineSeams}), registered under their context so a
 * file system of the same configuration shares them.
 */
public final class SeamedEngines {
  private SeamedEngines() {}

  /**
   * Builds the engine of {@code conf}'s context with {@code seams}; the context must have no engine
   * yet. One reference: close it once (a file system opened meanwhile holds its own).
   */
  public static Engine acquire(Configuration conf, EngineSeams seams) {
    return Engine.acquire(conf, seams);
  }

  /** Seams that run {@code hook} before each block a prefetch opens. */
  public static EngineSeams beforePrefetchOpen(Consumer<LocatedBlock> hook) {
    return new EngineSeams() {
      @Override
      public void beforePrefetchOpen(LocatedBlock block) {
        hook.accept(block);
      }
    };
  }

  /** Seams that run {@code hook} in each reader's miss between its checks and its load. */
  public static EngineSeams afterMissChecked(Consumer<ExtendedBlock> hook) {
    return new EngineSeams() {
      @Override
      public void afterMissChecked(ExtendedBlock block) {
        hook.accept(block);
      }
    };
  }
}
