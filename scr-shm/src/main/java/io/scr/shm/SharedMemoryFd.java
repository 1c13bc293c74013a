package io.scr.shm;

import io.scr.shm.internal.NativeIo;
import java.io.FileDescriptor;
import java.io.IOException;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An fd of a new, zero-filled shared-memory file made by {@link SegmentFactory} (creator side).
 *
 * <p>fd ownership: this object owns the fd and {@link #close()} closes it, once. {@link #fd()} and
 * {@link #fileDescriptor()} are views of the same number, not duplicates: do not close them
 * yourself, and do not use them after {@link #close()}. Passing the {@link FileDescriptor} over a
 * UNIX socket ({@code SCM_RIGHTS}) gives the peer its own duplicate, so the usual creator flow is:
 * create, {@link Segment#map(ShmId, int, int) map}, send, close this; the mapping and the peer's
 * copy keep the memory alive. A {@link Cleaner} closes an fd that was never closed, and logs it.
 *
 * <p>Thread-safety: {@link #close()} is idempotent and thread-safe; the accessors are safe to call
 * concurrently with each other but not with {@link #close()}.
 */
public final class SharedMemoryFd implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SharedMemoryFd.class);
  private static final Cleaner CLEANER = ShmCleaner.INSTANCE;

  private final int fd;
  private final int length;
  private final boolean memfd;
  private final FdCloser closer;
  private final Cleaner.Cleanable cleanable;

  SharedMemoryFd(int fd, int length, boolean memfd) {
    this.fd = fd;
    this.length = length;
    this.memfd = memfd;
    this.closer = new FdCloser(fd);
    this.cleanable = CLEANER.register(this, closer);
  }

  /** The numeric fd, a view: owned by this object. */
  public int fd() {
    checkOpen();
    return fd;
  }

  /**
   * A {@link FileDescriptor} view of the fd for sending over a UNIX socket. Owned by this object:
   * never close it or a stream around it.
   */
  public FileDescriptor fileDescriptor() throws IOException {
    checkOpen();
    return NativeIo.fileDescriptorView(fd);
  }

  /** Length in bytes (zero-filled, not sparse). */
  public int length() {
    return length;
  }

  /** True for a sealed memfd; false for a deleted file in the fallback directory. */
  public boolean isMemfd() {
    return memfd;
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return closer.closed.get();
  }

  /** Closes the fd, once; later calls do nothing. Mappings made from it stay valid. */
  @Override
  public void close() {
    closer.explicit = true;
    cleanable.clean();
  }

  private void checkOpen() {
    if (closer.closed.get()) {
      throw new IllegalStateException("shared-memory fd " + fd + " is closed");
    }
  }

  @Override
  public String toString() {
    return "SharedMemoryFd{fd="
        + fd
        + ", "
        + length
        + " bytes, "
        + (memfd ? "memfd" : "deleted file")
        + (isClosed() ? ", closed}" : "}");
  }

  private static final class FdCloser implements Runnable {
    private final int fd;
    final AtomicBoolean closed = new AtomicBoolean();
    volatile boolean explicit;

    FdCloser(int fd) {
      this.fd = fd;
    }

    @Override
    public void run() {
      if (!closed.compareAndSet(false, true)) {
        return;
      }
      if (!explicit) {
        LOG.warn("Shared-memory fd {} was never closed; the cleaner closes it now", fd);
      }
      try {
        NativeIo.close(fd);
      } catch (IOException e) {
        LOG.warn("Could not close shared-memory fd {}", fd, e);
      }
    }
  }
}
