package io.scr.reliability;

import io.scr.core.hdfs.ScrReplicaAccessorBuilder;
import io.scr.core.internal.engine.Engine;
import io.scr.testing.DataNodeMode;
import io.scr.testing.MiniDfs;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/**
 * The two ways a client turns scr on (docs/user-guide.md, section 2), each opening a file system
 * with its own scr engine (client context) so no test inherits another's backoff or cache.
 */
enum IntegrationPoint {
  /** {@code fs.hdfs.impl = ScrFileSystem}, as {@link Faults#scrFileSystem} configures it. */
  SCR_FILESYSTEM {
    @Override
    FileSystem open(MiniDfs dfs, Consumer<Configuration> extra) {
      return Faults.scrFileSystem(dfs, extra);
    }

    @Override
    Engine engine(FileSystem fs) {
      return Engine.running(fs.getConf());
    }
  },
  /**
   * The stock {@code DistributedFileSystem} with {@code dfs.client.replica.accessor.builder.classes
   * = ScrReplicaAccessorBuilder} and {@code dfs.client.read.shortcircuit = false}, as the user
   * guide says for this path: every short-circuit byte is the accessor's.
   */
  REPLICA_ACCESSOR {
    @Override
    FileSystem open(MiniDfs dfs, Consumer<Configuration> extra) {
      return dfs.newFileSystem(
          c -> {
            c.set(
                "dfs.client.replica.accessor.builder.classes",
                ScrReplicaAccessorBuilder.class.getName());
            c.setBoolean("dfs.client.read.shortcircuit", false);
            c.set("scr.client.context", "events-accessor-" + CONTEXTS.incrementAndGet());
            // as Faults.scrSettings: stock retries after a failed block read wait up to 3 s
            c.setInt("dfs.client.retry.window.base", 10);
            if (dfs.mode() == DataNodeMode.SHIM) {
              c.set("scr.client.socket.paths", c.get(MiniDfs.SHIM_SOCKET_PATH_KEY));
            }
            extra.accept(c);
          });
    }

    @Override
    Engine engine(FileSystem fs) {
      // the engine is keyed by the context, which the file system's configuration names
      return Engine.running(fs.getConf());
    }
  };

  private static final AtomicInteger CONTEXTS = new AtomicInteger();

  /** A new file system of this integration point on {@code dfs}, {@code extra} applied last. */
  abstract FileSystem open(MiniDfs dfs, Consumer<Configuration> extra);

  /** The scr engine behind {@code fs} (for diagnostics in failure messages). */
  abstract Engine engine(FileSystem fs);
}
