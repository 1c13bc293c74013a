package io.scr.shm;

import io.scr.shm.internal.NativeCallException;
import io.scr.shm.internal.NativeIo;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creator side: makes the fds behind new segments. Preferred mechanism: {@code memfd_create} with
 * {@code MFD_CLOEXEC | MFD_ALLOW_SEALING}, sized with {@code ftruncate}, zero-filled with {@code
 * pwrite} (so its pages exist now, not on first touch) and sealed {@code F_SEAL_SHRINK |
 * F_SEAL_GROW} so the client can never be handed a segment that shrinks under its mapping.
 * Fallback, when memfd is unavailable or disabled: {@code open(O_CREAT|O_EXCL|O_RDWR, 0600)} in the
 * fallback directory ({@code /dev/shm} by default), {@code unlink} at once, zero-fill by writing
 * (not sparse, HDFS-6912), as the stock DataNode does.
 *
 * <p>Which mechanism is in use is never silent: {@link #mechanism()} says, and the first fallback
 * is logged at INFO with the memfd probe's cause. Immutable and thread-safe.
 */
public final class SegmentFactory {
  /** Stock DataNode segment size: 8192 bytes, 128 slots. */
  public static final int STOCK_SEGMENT_LENGTH = 8192;

  /**
   * Default fallback directory, as the DataNode's {@code
   * dfs.datanode.shared.file.descriptor.paths}.
   */
  public static final Path DEFAULT_FALLBACK_DIRECTORY = Paths.get("/dev/shm");

  private static final Logger LOG = LoggerFactory.getLogger(SegmentFactory.class);
  private static final int MAX_NAME_ATTEMPTS = 16;

  private final Path fallbackDirectory;
  private final boolean useMemfd;
  private final String namePrefix;

  private SegmentFactory(Builder b) {
    this.fallbackDirectory = b.fallbackDirectory;
    this.useMemfd = b.useMemfd && NativeIo.isMemfdAvailable();
    this.namePrefix = b.namePrefix;
    if (b.useMemfd && !useMemfd && NativeIo.isAvailable()) {
      LOG.info(
          "memfd_create is unavailable ({}); shared-memory segments use deleted files in {}",
          NativeIo.memfdUnavailabilityCause(),
          fallbackDirectory);
    }
  }

  /** A builder with the defaults: memfd when available, else {@code /dev/shm}. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Whether segments are memfds, which touch no file system: a creator may make them on a thread
   * that must never wait for storage. False for the fallback directory, which could be on a disk.
   */
  public boolean usesMemfd() {
    return useMemfd;
  }

  /** "memfd" or "deleted file in DIR". */
  public String mechanism() {
    return useMemfd ? "memfd" : "deleted file in " + fallbackDirectory;
  }

  /**
   * A new zero-filled shared-memory fd of {@code length} bytes; the caller owns it (see {@link
   * SharedMemoryFd}).
   *
   * @throws ShmUnavailableException when native access is unavailable
   * @throws IOException naming the failed call (e.g. the fallback directory is missing or full)
   */
  public SharedMemoryFd createFd(int length) throws IOException {
    NativeIo.ensureAvailable();
    if (length < Slot.BYTES_PER_SLOT) {
      throw new IllegalArgumentException("segment length " + length + " is below 64 bytes");
    }
    return useMemfd ? createMemfd(length) : createDeletedFile(length);
  }

  /**
   * Convenience for creators that need no fd afterwards (tests, local sources): creates an fd, maps
   * it as segment {@code id}, and closes the fd. The caller owns the returned segment.
   */
  public Segment createSegment(ShmId id, int length) throws IOException {
    try (SharedMemoryFd fd = createFd(length)) {
      return Segment.map(id, fd.fd(), length);
    }
  }

  private SharedMemoryFd createMemfd(int length) throws IOException {
    int fd = NativeIo.memfdCreate(namePrefix);
    try {
      NativeIo.ftruncate(fd, length);
      NativeIo.writeZeros(fd, length);
      NativeIo.addSeals(fd, NativeIo.F_SEAL_SHRINK | NativeIo.F_SEAL_GROW);
      return new SharedMemoryFd(fd, length, true);
    } catch (IOException | RuntimeException e) {
      closeQuietly(fd, e);
      throw e;
    }
  }

  private SharedMemoryFd createDeletedFile(int length) throws IOException {
    int fd = -1;
    Path path = null;
    for (int attempt = 0; fd < 0; attempt++) {
      path =
          fallbackDirectory.resolve(
              namePrefix + "_" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
      try {
        fd = NativeIo.openExclusive(path);
      } catch (NativeCallException e) {
        if (e.errno() != 17 /* EEXIST */ || attempt >= MAX_NAME_ATTEMPTS) {
          throw new IOException(
              e.getMessage()
                  + ": cannot create a shared-memory file in "
                  + fallbackDirectory
                  + "; point the fallback directory at a writable tmpfs",
              e);
        }
      }
    }
    try {
      NativeIo.unlink(path);
      NativeIo.writeZeros(fd, length);
      return new SharedMemoryFd(fd, length, false);
    } catch (IOException | RuntimeException e) {
      closeQuietly(fd, e);
      throw e;
    }
  }

  private static void closeQuietly(int fd, Throwable primary) {
    try {
      NativeIo.close(fd);
    } catch (IOException e) {
      primary.addSuppressed(e);
    }
  }

  /** Configuration for {@link SegmentFactory}. Not thread-safe. */
  public static final class Builder {
    private Path fallbackDirectory = DEFAULT_FALLBACK_DIRECTORY;
    private boolean useMemfd = true;
    private String namePrefix = "scr-shm";

    private Builder() {}

    /** Where deleted-file segments live when memfd is off or unavailable; default /dev/shm. */
    public Builder fallbackDirectory(Path dir) {
      if (dir == null) {
        throw new NullPointerException("dir");
      }
      this.fallbackDirectory = dir;
      return this;
    }

    /** Whether to use memfd when available; default true. False forces the fallback. */
    public Builder useMemfd(boolean useMemfd) {
      this.useMemfd = useMemfd;
      return this;
    }

    /**
     * memfd name / file name prefix (shows in /proc/PID/fd and /proc/PID/maps); default scr-shm.
     */
    public Builder namePrefix(String namePrefix) {
      if (namePrefix == null || namePrefix.isEmpty() || namePrefix.contains("/")) {
        throw new IllegalArgumentException("bad name prefix: " + namePrefix);
      }
      this.namePrefix = namePrefix;
      return this;
    }

    /** The factory. */
    public SegmentFactory build() {
      return new SegmentFactory(this);
    }
  }
}
