package io.scr.core.doctor;

import io.scr.socketpath.HostFacts;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;

/**
 * What the checks look at: the effective client configuration, the resources it was layered from
 * (in load order, each also loaded alone so a check can tell which one set a key), the process fd
 * limit and the DataNode user's uid (both injectable so tests need not change the JVM), and whether
 * to contact the NameNode. Immutable once built.
 */
public final class DoctorContext {
  private final Configuration conf;
  private final List<Layer> layers;
  private final long fdLimit;
  private final Integer dataNodeUid;
  private final Path trustedDirectoryForTests;
  private final boolean contactCluster;
  private final Path procRoot;
  private final HostFacts hostFacts;

  private DoctorContext(Builder b) {
    this.conf = b.conf;
    this.layers = Collections.unmodifiableList(new ArrayList<>(b.layers));
    this.fdLimit = b.fdLimit;
    this.dataNodeUid = b.dataNodeUid;
    this.trustedDirectoryForTests = b.trustedDirectoryForTests;
    this.contactCluster = b.contactCluster;
    this.procRoot = b.procRoot;
    this.hostFacts = b.hostFacts;
  }

  /** A builder over {@code conf}, the effective configuration. */
  public static Builder newBuilder(Configuration conf) {
    return new Builder(conf);
  }

  /** The effective configuration. */
  public Configuration conf() {
    return conf;
  }

  /** The configuration resources, in load order (later ones win). */
  public List<Layer> layers() {
    return layers;
  }

  /** RLIMIT_NOFILE soft limit to judge against; -1 if unknown. */
  public long fdLimit() {
    return fdLimit;
  }

  /**
   * The DataNode's uid for the path rules ({@code scr doctor --datanode-user}); null: the socket's
   * owner, else the effective uid of a DataNode process on this host, else unknown (never this
   * process's uid: the doctor usually runs as a client user).
   */
  public Integer dataNodeUid() {
    return dataNodeUid;
  }

  /** Where processes are listed ({@code /proc}; tests give a directory of their own). */
  Path procRoot() {
    return procRoot;
  }

  /** Owners, modes and user names of this host (tests give their own). */
  public HostFacts hostFacts() {
    return hostFacts;
  }

  /** Test-only: a directory whose ancestors the socket-path check trusts; null in production. */
  Path trustedDirectoryForTests() {
    return trustedDirectoryForTests;
  }

  /** Whether checks may contact the NameNode. */
  public boolean contactCluster() {
    return contactCluster;
  }

  /** One configuration resource loaded alone. */
  public static final class Layer {
    private final String name;
    private final Configuration alone;

    /** {@code alone} holds only this resource's keys (no defaults). */
    public Layer(String name, Configuration alone) {
      this.name = Objects.requireNonNull(name, "name");
      this.alone = Objects.requireNonNull(alone, "alone");
    }

    /** The resource's name (file path or class-path name). */
    public String name() {
      return name;
    }

    /** The resource's own keys. */
    public Configuration alone() {
      return alone;
    }
  }

  /** Builds a {@link DoctorContext}. Not thread-safe. */
  public static final class Builder {
    private final Configuration conf;
    private final List<Layer> layers = new ArrayList<>();
    private long fdLimit = io.scr.core.metrics.ProcessFds.softLimit();
    private Integer dataNodeUid;
    private Path trustedDirectoryForTests;
    private boolean contactCluster = true;
    private Path procRoot = java.nio.file.Paths.get("/proc");
    private HostFacts hostFacts = HostFacts.local();

    private Builder(Configuration conf) {
      this.conf = Objects.requireNonNull(conf, "conf");
    }

    /** Adds a resource layer (in load order). */
    public Builder layer(Layer layer) {
      layers.add(layer);
      return this;
    }

    /** The fd limit to judge against (default: this process's RLIMIT_NOFILE soft limit). */
    public Builder fdLimit(long limit) {
      this.fdLimit = limit;
      return this;
    }

    /**
     * The DataNode's uid (default: the socket's owner, else the owner of a DataNode process on this
     * host, else unknown and the ownership rule is not judged).
     */
    public Builder dataNodeUid(int uid) {
      this.dataNodeUid = uid;
      return this;
    }

    /**
     * Test-only: the socket-path check skips this directory and its ancestors, as stock's {@code
     * skipComponents} does in Hadoop's own tests (build directories often sit below world-writable
     * {@code /tmp}). Never set in production: the command line offers no way to.
     */
    Builder trustedDirectoryForTests(Path dir) {
      this.trustedDirectoryForTests = dir.toAbsolutePath();
      return this;
    }

    /** Test-only: the directory processes are listed in (default {@code /proc}). */
    Builder procRootForTests(Path dir) {
      this.procRoot = dir;
      return this;
    }

    /** Owners, modes and user names to judge by (default: this host's). */
    public Builder hostFacts(HostFacts facts) {
      this.hostFacts = Objects.requireNonNull(facts, "facts");
      return this;
    }

    /** Whether to contact the NameNode (default true). */
    public Builder contactCluster(boolean on) {
      this.contactCluster = on;
      return this;
    }

    /** The context. */
    public DoctorContext build() {
      return new DoctorContext(this);
    }
  }
}
