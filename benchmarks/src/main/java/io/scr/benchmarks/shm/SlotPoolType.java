package io.scr.benchmarks.shm;

import io.scr.shm.Segment;
import io.scr.shm.SegmentFactory;
import io.scr.shm.SegmentSource;
import io.scr.shm.ShmId;
import io.scr.shm.Slot;
import io.scr.shm.SlotPool;
import io.scr.shm.SlotPoolExhaustedException;
import java.io.IOException;
import java.io.UncheckedIOException;

/** The slot pools compared in {@link SlotPoolBenchmark}, behind one adapter. */
public enum SlotPoolType {
  /** scr's {@link SlotPool} with its default settings. */
  SCR_SLOT_POOL {
    @Override
    Adapter create(long loadCostNanos) {
      SegmentSource source =
          new SegmentSource() {
            @Override
            public Segment fetch() throws IOException {
              return loadSegment(loadCostNanos);
            }

            @Override
            public void returnSegment(Segment segment) {
              segment.close();
            }
          };
      SlotPool pool = SlotPool.newBuilder("bench", source, slots -> {}).build();
      return new Adapter() {
        @Override
        public Slot allocate() {
          try {
            return pool.allocate();
          } catch (SlotPoolExhaustedException e) {
            return null; // a reader proceeds without a slot; counted in the pool's stats
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }

        @Override
        public void release(Slot slot) {
          pool.release(slot);
        }

        @Override
        public String describe() {
          return pool.stats().toString();
        }

        @Override
        public void close() {
          pool.close();
        }
      };
    }
  },

  /**
   * One lock, segments loaded on demand by the allocating thread: see {@link StockLikeSlotPool}.
   */
  STOCK_LIKE_SINGLE_LOCK {
    @Override
    Adapter create(long loadCostNanos) {
      StockLikeSlotPool pool = new StockLikeSlotPool(() -> loadSegment(loadCostNanos));
      return new Adapter() {
        @Override
        public Slot allocate() {
          return pool.allocSlot();
        }

        @Override
        public void release(Slot slot) {
          pool.freeSlot(slot);
        }

        @Override
        public void close() {
          pool.close();
        }
      };
    }
  };

  private static final SegmentFactory FACTORY = SegmentFactory.newBuilder().build();

  abstract Adapter create(long loadCostNanos);

  /**
   * A real 8192-byte memfd segment, after spinning {@code costNanos} to stand for the
   * REQUEST_SHORT_CIRCUIT_SHM round trip to the DataNode.
   */
  static Segment loadSegment(long costNanos) throws IOException {
    long end = System.nanoTime() + costNanos;
    while (System.nanoTime() < end) {
      Thread.onSpinWait();
    }
    return FACTORY.createSegment(ShmId.random(), SegmentFactory.STOCK_SEGMENT_LENGTH);
  }

  /** What the benchmark drives. */
  interface Adapter extends AutoCloseable {
    /** A slot, or null when the pool gave up waiting (the reader would go on without one). */
    Slot allocate();

    void release(Slot slot);

    /** The pool's own counters, or empty. */
    default String describe() {
      return "";
    }

    @Override
    void close();
  }
}
