package io.scr.shm;

/**
 * The id of one slot: its segment's {@link ShmId} and its index in the segment, as Hadoop's {@code
 * SlotId} (what REQUEST/RELEASE_SHORT_CIRCUIT_FDS carry). Immutable.
 */
public final class SlotId {
  private final ShmId shmId;
  private final int index;

  private SlotId(ShmId shmId, int index) {
    if (shmId == null) {
      throw new NullPointerException("shmId");
    }
    if (index < 0) {
      throw new IllegalArgumentException("negative slot index " + index);
    }
    this.shmId = shmId;
    this.index = index;
  }

  /** The slot {@code index} of segment {@code shmId}. */
  public static SlotId of(ShmId shmId, int index) {
    return new SlotId(shmId, index);
  }

  /** The segment. */
  public ShmId shmId() {
    return shmId;
  }

  /** The index in the segment; the slot's bytes start at {@code index * 64}. */
  public int index() {
    return index;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof SlotId)) {
      return false;
    }
    SlotId other = (SlotId) o;
    return index == other.index && shmId.equals(other.shmId);
  }

  @Override
  public int hashCode() {
    return shmId.hashCode() * 31 + index;
  }

  @Override
  public String toString() {
    return shmId + ":" + index;
  }
}
