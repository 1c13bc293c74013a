package io.scr.shm.internal;

import com.kenai.jffi.MemoryIO;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Atomic 64-bit access to words of memory shared with another process (a mapped segment).
 *
 * <p>Why this class exists: jnr-ffi's {@code Pointer} has no compare-and-set, and Hadoop's own
 * {@code ShortCircuitShm} uses {@code sun.misc.Unsafe} on the raw address. We avoid Unsafe: jffi
 * (which jnr-ffi already ships and loads) wraps the address in a direct {@link ByteBuffer} via JNI
 * {@code NewDirectByteBuffer}, and a {@link MethodHandles#byteBufferViewVarHandle} over it gives
 * plain, volatile and compare-and-set access with the same memory semantics as {@code AtomicLong},
 * in native byte order. The JIT compiles these to the same instructions Unsafe would ({@code lock
 * cmpxchg} on x86). All access to shared memory goes through here so the ordering rules live in one
 * place.
 *
 * <p>Every offset must be a multiple of 8 (the VarHandle rejects misaligned atomic access).
 *
 * <p>Lifetime: this object does not own the memory. Touching it after the range is unmapped crashes
 * the JVM; its owner ({@link io.scr.shm.Segment}) unmaps only when the segment (and so every {@code
 * Slot} that reaches this object) is unreachable. Thread-safe.
 */
public abstract class SharedWords {
  /**
   * For a test double only (scr-shm's model tests back slot words with a Java array, whose accesses
   * Lincheck can interleave; it does not see accesses through a byte-buffer view). Production code
   * loads only {@link Mapped}, so calls through this type stay monomorphic and are inlined.
   */
  protected SharedWords() {}

  /** Wraps {@code length} bytes at {@code address}; the caller keeps owning the memory. */
  public static SharedWords wrap(long address, int length) {
    if ((address & 7) != 0) {
      throw new IllegalArgumentException("address is not 8-byte aligned: " + address);
    }
    ByteBuffer buffer = MemoryIO.getInstance().newDirectByteBuffer(address, length);
    return new Mapped(buffer.order(ByteOrder.nativeOrder()));
  }

  /** Length in bytes. */
  public abstract int length();

  /** Volatile (sequentially consistent) load. */
  public abstract long loadVolatile(int offset);

  /** Volatile (sequentially consistent) store. */
  public abstract void storeVolatile(int offset, long value);

  /** Plain load: no ordering; for diagnostics and single-threaded tests. */
  public abstract long loadPlain(int offset);

  /** Volatile compare-and-set; true when the word held {@code expected} and now holds update. */
  public abstract boolean compareAndSetLong(int offset, long expected, long update);

  /** One byte, plain; for layout tests that pin the bytes. */
  public abstract byte loadByte(int offset);

  /** Words of mapped memory, through a VarHandle view of a direct buffer at their address. */
  private static final class Mapped extends SharedWords {
    private static final VarHandle LONGS =
        MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private final ByteBuffer buffer;

    Mapped(ByteBuffer buffer) {
      this.buffer = buffer;
    }

    @Override
    public int length() {
      return buffer.capacity();
    }

    @Override
    public long loadVolatile(int offset) {
      return (long) LONGS.getVolatile(buffer, offset);
    }

    @Override
    public void storeVolatile(int offset, long value) {
      LONGS.setVolatile(buffer, offset, value);
    }

    @Override
    public long loadPlain(int offset) {
      return (long) LONGS.get(buffer, offset);
    }

    @Override
    public boolean compareAndSetLong(int offset, long expected, long update) {
      return LONGS.compareAndSet(buffer, offset, expected, update);
    }

    @Override
    public byte loadByte(int offset) {
      return buffer.get(offset);
    }
  }
}
