package io.scr.core.doctor;

import io.scr.core.ScrKeys;
import io.scr.shm.ShmSupport;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.util.NativeCodeLoader;

/** Small checks of the client's environment: scr wired in, shared memory, libhadoop. */
final class EnvironmentChecks {
  private EnvironmentChecks() {}

  static final String ACCESSOR = "io.scr.core.hdfs.ScrReplicaAccessorBuilder";
  static final String FILE_SYSTEM = "io.scr.core.hdfs.ScrFileSystem";

  /** Stock HDFS's wiring keys (not scr settings, so not in {@link ScrKeys}). */
  static final String ACCESSOR_KEY = HdfsClientConfigKeys.REPLICA_ACCESSOR_BUILDER_CLASSES_KEY;

  static final String FILE_SYSTEM_KEY = "fs.hdfs.impl";

  static boolean scrWired(DoctorContext ctx) {
    String accessors = ctx.conf().get(ACCESSOR_KEY, "");
    return accessors.contains(ACCESSOR)
        || FILE_SYSTEM.equals(ctx.conf().getTrimmed(FILE_SYSTEM_KEY));
  }

  /** scr is configured as a read path and enabled. */
  static final class Wiring implements Check {
    @Override
    public String id() {
      return "scr-config";
    }

    @Override
    public List<Finding> run(DoctorContext ctx) {
      if (!ScrKeys.CLIENT_ENABLED.get(ctx.conf()::get)) {
        return Collections.singletonList(
            Finding.fail(
                id(), ScrKeys.CLIENT_ENABLED.name() + " is false", "remove it or set it to true"));
      }
      if (!scrWired(ctx)) {
        return Collections.singletonList(
            Finding.warn(
                id(),
                "scr is not wired into this configuration: reads use the stock client",
                "set "
                    + ACCESSOR_KEY
                    + "="
                    + ACCESSOR
                    + " (no other change) or "
                    + FILE_SYSTEM_KEY
                    + "="
                    + FILE_SYSTEM
                    + " (fastest) in hdfs-site.xml"));
      }
      return Collections.singletonList(Finding.ok(id(), "scr is wired in and enabled"));
    }
  }

  /** Shared memory for slots works in this JVM. */
  static final class SharedMemory implements Check {
    @Override
    public String id() {
      return "shared-memory";
    }

    @Override
    public List<Finding> run(DoctorContext ctx) {
      if (!ScrKeys.SHM_ENABLED.get(ctx.conf()::get)) {
        return Collections.singletonList(
            Finding.warn(
                id(),
                ScrKeys.SHM_ENABLED.name() + " is false: replicas go stale by age only",
                "remove "
                    + ScrKeys.SHM_ENABLED.name()
                    + "=false so the DataNode can invalidate replicas at once"));
      }
      if (!ShmSupport.isAvailable()) {
        return Collections.singletonList(
            Finding.warn(
                id(),
                "shared memory is not usable here: " + ShmSupport.unavailabilityCause(),
                "reads still work without slots; for slot-based invalidation use Linux x86_64"
                    + " or aarch64 with /dev/shm mounted"));
      }
      return Collections.singletonList(
          Finding.ok(
              id(),
              "shared memory usable"
                  + (ShmSupport.isMemfdAvailable() ? " (memfd)" : " (/dev/shm files)")));
    }
  }

  /** libhadoop is not needed by scr; stock short-circuit without it silently does nothing. */
  static final class Libhadoop implements Check {
    @Override
    public String id() {
      return "libhadoop";
    }

    @Override
    public List<Finding> run(DoctorContext ctx) {
      boolean loaded = NativeCodeLoader.isNativeCodeLoaded();
      boolean stockScr = ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.get(ctx.conf()::get);
      if (!loaded && stockScr && !scrWired(ctx)) {
        return Collections.singletonList(
            Finding.fail(
                id(),
                ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.name()
                    + "=true but libhadoop is not loaded: the stock client silently reads over TCP",
                "wire scr in, which needs no libhadoop: " + ACCESSOR_KEY + "=" + ACCESSOR));
      }
      return Collections.singletonList(
          Finding.ok(
              id(),
              "scr needs no libhadoop (it is "
                  + (loaded ? "loaded" : "not loaded")
                  + " here; only a stock DataNode without the scr shim needs it)"));
    }
  }

  /**
   * Zero-copy reads through the replica accessor: stock's {@code ExternalBlockReader} has no
   * mapping, so where stock short-circuit reads mapped a block for {@code read(ByteBufferPool, int,
   * EnumSet)}, the accessor's block is copied into a buffer of the caller's pool, and a caller
   * without a pool gets {@code UnsupportedOperationException}. Only a client that had stock
   * short-circuit reads with mappings on loses anything; {@code ScrFileSystem} maps blocks itself.
   */
  static final class AccessorZeroCopy implements Check {
    static final String MMAP_KEY = HdfsClientConfigKeys.Mmap.ENABLED_KEY;

    @Override
    public String id() {
      return "zero-copy";
    }

    @Override
    public List<Finding> run(DoctorContext ctx) {
      if (zeroCopyLostToAccessor(ctx.conf())) {
        return Collections.singletonList(
            Finding.warn(
                id(),
                "the replica accessor serves blocks that stock short-circuit reads would map:"
                    + " zero-copy reads (read(ByteBufferPool, int, EnumSet)) of them are copies,"
                    + " and a caller that passes no ByteBufferPool gets"
                    + " UnsupportedOperationException",
                "use "
                    + FILE_SYSTEM_KEY
                    + "="
                    + FILE_SYSTEM
                    + " (it maps blocks for zero-copy reads), or make zero-copy callers pass a"
                    + " ByteBufferPool"));
      }
      return Collections.singletonList(
          Finding.ok(id(), "zero-copy reads work as they did without scr"));
    }
  }

  /**
   * Whether {@code conf} wires the replica accessor (and not {@code ScrFileSystem}) into a client
   * whose stock short-circuit reads would map blocks for zero-copy reads.
   */
  static boolean zeroCopyLostToAccessor(org.apache.hadoop.conf.Configuration conf) {
    return conf.get(ACCESSOR_KEY, "").contains(ACCESSOR)
        && !FILE_SYSTEM.equals(conf.getTrimmed(FILE_SYSTEM_KEY))
        && ScrKeys.DFS_CLIENT_READ_SHORTCIRCUIT.get(conf::get)
        && conf.getBoolean(AccessorZeroCopy.MMAP_KEY, HdfsClientConfigKeys.Mmap.ENABLED_DEFAULT);
  }
}
