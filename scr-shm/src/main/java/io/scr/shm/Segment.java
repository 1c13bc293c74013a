package io.scr.shm;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.scr.shm.internal.NativeIo;
import io.scr.shm.internal.SharedWords;
import java.io.FileDescriptor;
import java.io.IOException;
import java.lang.ref.Cleaner;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A shared-memory segment: an fd's first {@code length} bytes mapped {@code MAP_SHARED} read-write
 * and cut into 64-byte {@link Slot}s, laid out exactly as HDFS {@code ShortCircuitShm}, so one code
 * path reads stock DataNode segments and scr shim segments alike.
 *
 * <p>Both sides use this class. The <b>creator</b> (DataNode or the scr shim) makes the fd with
 * {@link SegmentFactory}, maps it with {@link #map(ShmId, int, int)}, sends the fd to the client
 * and then uses {@link #registerSlot}, {@link #unregisterSlot} and {@link #invalidateAll()}. The
 * <b>user</b> (client) maps the fd it received with {@link #map(ShmId, FileDescriptor, int)} and
 * hands the segment to a {@link SlotPool}, which allocates slots the stock way (store 0, then set
 * VALID).
 *
 * <p>fd ownership: {@code map} borrows the fd; the mapping holds its own reference to the memory,
 * so the caller may (and should) close its fd as soon as {@code map} returns.
 *
 * <p>Thread-safety: slot word access is lock-free (see {@link Slot}). The creator-side registration
 * bitmap is guarded by this object's monitor, like Hadoop's {@code synchronized} {@code
 * ShortCircuitShm}. {@link #close()} is idempotent and thread-safe, but the caller must guarantee
 * the rule below.
 *
 * <p><b>Closing, and why a stale slot reference cannot crash the JVM.</b> Touching unmapped memory
 * crashes the JVM, and slots are read by threads that may lag behind the segment's owner (a cached
 * replica checking VALID as its segment is returned). So {@link #close()} does not unmap: it
 * replaces the shared pages, in one {@code mmap(MAP_FIXED)}, with private zero pages. The shared
 * memory is released at once (the DataNode's side and the fd's pages are no longer pinned by this
 * process), every later read of a slot sees a zero word (not VALID, not anchorable) and a write
 * lands in a private page nobody reads. The address range itself stays reserved until the segment
 * object is unreachable (no {@code Slot} of it is referenced anywhere, and every slot access keeps
 * its slot reachable to its end); then the module's {@link Cleaner} unmaps it. A segment that was
 * never closed is unmapped the same way, with a warning: the cleaner is the last line of defence
 * for the shared memory, never the plan. A closed segment therefore costs one 4-8 KiB anonymous
 * mapping (no resident memory unless written) until the next garbage collection that reclaims it.
 *
 * <p>Owners still close a segment only when they are done with it: a {@link SlotPool} hands it back
 * to its {@link SegmentSource} (which closes it) only after every slot of the segment is back in
 * its free bitmap and the segment is out of its allocation path; a creator closes it after the
 * client's socket is gone.
 */
public final class Segment implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Segment.class);
  private static final Cleaner CLEANER = ShmCleaner.INSTANCE;

  private final ShmId id;
  private final int length;
  private final SharedWords words;
  private final Slot[] slots;
  private final AtomicBoolean closed;
  private final long address;

  @GuardedBy("this")
  private final BitSet registered;

  /**
   * The pool entry while a {@link SlotPool} holds this segment (client side), else null. Written
   * under the pool's segment lock ({@link SegmentTable}); read without it by {@code release}
   * (volatile).
   */
  volatile PooledSegment poolEntry;

  private Segment(ShmId id, long address, int length) {
    this.id = id;
    this.length = length;
    this.words = SharedWords.wrap(address, length);
    this.closed = new AtomicBoolean(); // before the slots, which hold it
    this.slots = new Slot[length / Slot.BYTES_PER_SLOT];
    for (int i = 0; i < slots.length; i++) {
      slots[i] = new Slot(this, words, i);
    }
    this.registered = new BitSet(slots.length);
    this.address = address;
    CLEANER.register(this, new Unmapper(id, address, length, closed));
  }

  /**
   * Maps the first {@code length} bytes of a received fd (user side). {@code length} is rounded
   * down to a multiple of 64, as stock does. The fd is borrowed: the caller still owns and closes
   * it, and may do so right after this returns.
   *
   * @throws ShmUnavailableException when native access is unavailable (the probe's cause attached)
   * @throws IOException when the fd is invalid, too short, or mmap fails
   */
  public static Segment map(ShmId id, FileDescriptor fd, int length) throws IOException {
    NativeIo.ensureAvailable();
    return map(id, NativeIo.fdNumber(fd), length);
  }

  /** As {@link #map(ShmId, FileDescriptor, int)}, for a numeric fd (borrowed, not closed). */
  public static Segment map(ShmId id, int fd, int length) throws IOException {
    NativeIo.ensureAvailable();
    if (id == null) {
      throw new NullPointerException("id");
    }
    int usable = length - length % Slot.BYTES_PER_SLOT;
    if (usable < Slot.BYTES_PER_SLOT) {
      throw new IOException(
          "segment " + id + " is " + length + " bytes, less than one 64-byte slot");
    }
    long address = NativeIo.mmapShared(fd, usable);
    return new Segment(id, address, usable);
  }

  /** The segment's id. */
  public ShmId id() {
    return id;
  }

  /** Mapped length in bytes, a multiple of 64. */
  public int length() {
    return length;
  }

  /** Number of slots ({@code length / 64}; 128 for a stock 8192-byte segment). */
  public int slotCount() {
    return slots.length;
  }

  /**
   * The slot at {@code index}. Slot objects are created once per segment, so this never allocates.
   */
  public Slot slot(int index) {
    return slots[index];
  }

  /**
   * Creator side: accepts a client's claim on slot {@code index} for a replica, with the checks the
   * DataNode makes ({@code ShortCircuitRegistry.registerSlot}): the index must be in range and not
   * already registered, and the client must have set VALID. Then sets or clears ANCHORABLE.
   *
   * @throws InvalidSlotException naming which check failed; nothing changes
   */
  public Slot registerSlot(int index, boolean anchorable) throws InvalidSlotException {
    if (index < 0 || index >= slots.length) {
      throw new InvalidSlotException(
          "invalid slot index " + index + " for segment " + id + " of " + slots.length + " slots");
    }
    Slot slot = slots[index];
    synchronized (this) {
      checkOpen();
      if (registered.get(index)) {
        throw new InvalidSlotException(
            "slot " + index + " of segment " + id + " is already in use");
      }
      if (!slot.isValid()) {
        throw new InvalidSlotException(
            "slot " + index + " of segment " + id + " is not marked as valid");
      }
      registered.set(index);
    }
    if (anchorable) {
      slot.makeAnchorable();
    } else {
      slot.makeUnanchorable();
    }
    return slot;
  }

  /**
   * Creator side: drops the registration of slot {@code index} and clears its VALID bit, as the
   * DataNode does on RELEASE_SHORT_CIRCUIT_FDS. The client may then reuse the slot.
   *
   * @throws InvalidSlotException if the slot is not registered
   */
  public void unregisterSlot(int index) throws InvalidSlotException {
    if (index < 0 || index >= slots.length) {
      throw new InvalidSlotException(
          "invalid slot index " + index + " for segment " + id + " of " + slots.length + " slots");
    }
    synchronized (this) {
      checkOpen();
      if (!registered.get(index)) {
        throw new InvalidSlotException("slot " + index + " of segment " + id + " is not in use");
      }
      slots[index].makeInvalid();
      registered.clear(index);
    }
  }

  /** Creator side: whether slot {@code index} is registered. */
  public synchronized boolean isRegistered(int index) {
    return registered.get(index);
  }

  /** Creator side: the number of registered slots. */
  public synchronized int registeredCount() {
    return registered.cardinality();
  }

  /**
   * Clears VALID on every slot at once (the segment's peer is gone, or the DataNode is dropping the
   * segment): every holder sees its replica as stale on its next check. Safe to call from either
   * side and more than once; must not be called after {@link #close()}.
   */
  public void invalidateAll() {
    checkOpen();
    for (Slot slot : slots) {
      slot.makeInvalid();
    }
  }

  /** The mapped address; for tests that look the range up in /proc/self/maps. */
  long address() {
    return address;
  }

  /** Whether {@link #close()} has run (the slots read as zero from then on). */
  public boolean isClosed() {
    return closed.get();
  }

  /** The flag {@link #isClosed()} reads, for this segment's slots (set once, by close). */
  AtomicBoolean closedFlag() {
    return closed;
  }

  /**
   * Releases the shared memory, once; later calls do nothing. The slots read as zero (invalid) from
   * now on, and the address range is unmapped when this segment is no longer reachable (see the
   * class javadoc). Should replacing the pages fail, the shared mapping is kept until then instead:
   * memory is held longer, nothing is touched after unmap.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      NativeIo.replaceWithZeroPages(address, length);
    } catch (IOException | RuntimeException e) {
      LOG.warn(
          "Could not release the shared memory of segment {} on close; it stays mapped until the"
              + " segment is garbage collected",
          id,
          e);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("segment " + id + " is closed");
    }
  }

  @Override
  public String toString() {
    return "Segment{" + id + ", " + slots.length + " slots" + (isClosed() ? ", closed}" : "}");
  }

  /**
   * Unmaps the range exactly once, from the cleaner, when the segment is unreachable (so no thread
   * can touch it); holds no Segment reference. Warns if the segment was never closed.
   */
  private static final class Unmapper implements Runnable {
    private final ShmId id;
    private final long address;
    private final int length;
    private final AtomicBoolean closed;

    Unmapper(ShmId id, long address, int length, AtomicBoolean closed) {
      this.id = id;
      this.address = address;
      this.length = length;
      this.closed = closed;
    }

    @Override
    public void run() {
      if (closed.compareAndSet(false, true)) {
        LOG.warn("Segment {} was never closed; the cleaner unmaps it now", id);
      }
      try {
        NativeIo.munmap(address, length);
      } catch (IOException e) {
        LOG.warn("Could not unmap segment {}", id, e);
      }
    }
  }
}
