package io.scr.shim.internal;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;

/**
 * Benchmark and test entry point to the shim's invalidation scan, which is otherwise
 * package-private: the shim's real segment registry with a given number of registered slots (in
 * stock-sized 128-slot segments), scanned against a dataset stub (a map of finalized replicas, the
 * DataNode's replica map's stand-in). Not API: it may change with the shim.
 *
 * <p>Owns the segments it maps; {@link #close()} unmaps them. Not thread-safe.
 */
public final class InvalidationScanFixture implements AutoCloseable {
  /** What the shim package implements behind this fixture. */
  public interface Harness extends AutoCloseable {
    /** One scan; returns the number of slots it invalidated. */
    int scan();

    /** Slots registered at creation. */
    int slots();

    /** Blocks the scan still watches. */
    int watchedBlocks();

    /** Registered slots whose VALID bit is set. */
    int validSlots();

    /** Puts a new replica object for the block in the stub (as a move or finalize does). */
    void replaceReplica(long blockId);

    /** Removes the block from the stub (as a deletion does). */
    void removeReplica(long blockId);

    @Override
    void close();
  }

  private static final String HARNESS_CLASS = "io.scr.shim.InvalidationScanHarness";

  private final Harness harness;

  private InvalidationScanFixture(Harness harness) {
    this.harness = harness;
  }

  /**
   * A registry with {@code slots} registered slots, {@code slotsPerBlock} per block (block ids 0,
   * 1, ...), every replica present and unchanged, so a scan invalidates nothing until the stub is
   * changed.
   */
  public static InvalidationScanFixture create(int slots, int slotsPerBlock) throws IOException {
    try {
      Constructor<?> c = Class.forName(HARNESS_CLASS).getDeclaredConstructor(int.class, int.class);
      c.setAccessible(true);
      return new InvalidationScanFixture((Harness) c.newInstance(slots, slotsPerBlock));
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException) {
        throw (IOException) cause;
      }
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException("cannot create " + HARNESS_CLASS, cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          HARNESS_CLASS + " is missing from this scr-datanode-shim build", e);
    }
  }

  /** One invalidation scan over every watched block; returns the slots it invalidated. */
  public int scan() {
    return harness.scan();
  }

  /** Slots registered at creation. */
  public int slots() {
    return harness.slots();
  }

  /** Blocks the scan still watches (invalidated slots are no longer watched). */
  public int watchedBlocks() {
    return harness.watchedBlocks();
  }

  /** Registered slots whose VALID bit is still set. */
  public int validSlots() {
    return harness.validSlots();
  }

  /** Gives block {@code blockId} a new replica object in the stub, as a move or finalize does. */
  public void replaceReplica(long blockId) {
    harness.replaceReplica(blockId);
  }

  /** Removes block {@code blockId} from the stub, as a deletion does. */
  public void removeReplica(long blockId) {
    harness.removeReplica(blockId);
  }

  /** Unmaps every segment. Idempotent. */
  @Override
  public void close() {
    harness.close();
  }
}
