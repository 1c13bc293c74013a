package io.scr.benchmarks.shm;

import io.scr.shm.Segment;
import io.scr.shm.ShmId;
import io.scr.shm.Slot;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A slot pool built like stock {@code DfsClientShmManager.EndpointShmManager}: one {@link
 * ReentrantLock} for everything, {@code full}/{@code notFull} maps of segments, a segment loaded on
 * demand by the allocating thread while every other allocator waits on {@code finishedLoading}, and
 * an empty segment torn down at once when its last slot is freed.
 *
 * <p>Simplified in the baseline's favour: {@link #freeSlot} frees synchronously under the lock
 * (stock first sends RELEASE_SHORT_CIRCUIT_FDS from a one-thread executor, then takes the lock),
 * and tearing a segment down just unmaps it (stock also shuts the socket down).
 */
final class StockLikeSlotPool {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition finishedLoading = lock.newCondition();
  private final Callable<Segment> loader;
  private final TreeMap<ShmId, Segment> full = new TreeMap<>();
  private final TreeMap<ShmId, Segment> notFull = new TreeMap<>();
  private final Map<Segment, BitSet> allocated = new HashMap<>();
  private boolean loading;

  StockLikeSlotPool(Callable<Segment> loader) {
    this.loader = loader;
  }

  Slot allocSlot() {
    lock.lock();
    try {
      while (true) {
        Map.Entry<ShmId, Segment> entry = notFull.firstEntry();
        if (entry != null) {
          return allocAndRegisterSlot(entry.getValue());
        }
        if (loading) {
          finishedLoading.awaitUninterruptibly();
          continue;
        }
        loading = true;
        lock.unlock();
        Segment segment;
        try {
          segment = loader.call();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        } finally {
          lock.lock();
          loading = false;
          finishedLoading.signalAll();
        }
        allocated.put(segment, new BitSet(segment.slotCount()));
        notFull.put(segment.id(), segment);
      }
    } finally {
      lock.unlock();
    }
  }

  private Slot allocAndRegisterSlot(Segment segment) {
    BitSet bits = allocated.get(segment);
    int index = bits.nextClearBit(0);
    bits.set(index);
    Slot slot = segment.slot(index);
    slot.storeVolatile(0);
    slot.makeValid();
    if (bits.cardinality() == segment.slotCount()) {
      notFull.remove(segment.id());
      full.put(segment.id(), segment);
    }
    return slot;
  }

  void freeSlot(Slot slot) {
    lock.lock();
    try {
      Segment segment = slot.segment();
      BitSet bits = allocated.get(segment);
      boolean wasFull = bits.cardinality() == segment.slotCount();
      bits.clear(slot.index());
      if (wasFull) {
        full.remove(segment.id());
      }
      if (bits.isEmpty()) {
        notFull.remove(segment.id());
        allocated.remove(segment);
        segment.close();
      } else {
        notFull.put(segment.id(), segment);
      }
    } finally {
      lock.unlock();
    }
  }

  void close() {
    lock.lock();
    try {
      allocated.keySet().forEach(Segment::close);
      allocated.clear();
      full.clear();
      notFull.clear();
    } finally {
      lock.unlock();
    }
  }
}
