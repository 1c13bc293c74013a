package io.scr.shim;

import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SharedMemoryFd;
import io.scr.shm.ShmId;
import io.scr.shm.ShmSupport;
import java.io.IOException;
import java.io.UncheckedIOException;
import jnr.ffi.Memory;
import jnr.ffi.Runtime;
import org.newsclub.net.unix.AFUNIXSocket;

/**
 * Starts the process-wide daemon threads our native stack creates once and keeps for the JVM's life
 * (scr-shm's static {@code Cleaner}s, jnr-ffi's reference finalizer, junixsocket) before the
 * fixture takes its leak baseline, so the leak check judges what the shim itself leaves behind.
 */
public final class JvmSingletons {
  private JvmSingletons() {}

  /** Starts them; idempotent. */
  public static void warm() {
    try (SharedMemoryFd fd = SegmentFactory.newBuilder().build().createFd(8192);
        Segment s = Segment.map(ShmId.random(), fd.fd(), 8192)) {
      s.slotCount();
      ShmSupport.isAvailable();
      AFUNIXSocket.newInstance().close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Memory.allocateDirect(Runtime.getSystemRuntime(), 8);
  }
}
