package io.scr.shm;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link SegmentSource} of local memfd segments with sequential ids ({@code hi=0, lo=seq}), which
 * records what it handed out and took back and lets a test script each fetch.
 */
final class LocalSegmentSource implements SegmentSource {
  /** Decides what one fetch does; may block or throw. */
  interface FetchHook {
    void beforeFetch(int fetchNumber) throws IOException;
  }

  private final SegmentFactory factory = SegmentFactory.newBuilder().build();
  private final int length;
  private final AtomicLong nextId = new AtomicLong();
  private final AtomicInteger fetchCalls = new AtomicInteger();
  private final List<Segment> fetched = Collections.synchronizedList(new ArrayList<>());
  private final List<Segment> returned = Collections.synchronizedList(new ArrayList<>());
  final BlockingQueue<Segment> returnedQueue = new LinkedBlockingQueue<>();
  final BlockingQueue<Segment> fetchedQueue = new LinkedBlockingQueue<>();
  private volatile FetchHook hook = n -> {};
  private volatile boolean dirtySlots;

  LocalSegmentSource() {
    this(SegmentFactory.STOCK_SEGMENT_LENGTH);
  }

  LocalSegmentSource(int length) {
    this.length = length;
  }

  LocalSegmentSource onFetch(FetchHook hook) {
    this.hook = hook;
    return this;
  }

  /** Fill every slot word with garbage before handing a segment over. */
  LocalSegmentSource dirtySlots() {
    this.dirtySlots = true;
    return this;
  }

  @Override
  public Segment fetch() throws IOException {
    hook.beforeFetch(fetchCalls.incrementAndGet());
    Segment segment = factory.createSegment(ShmId.of(0, nextId.getAndIncrement()), length);
    if (dirtySlots) {
      for (int i = 0; i < segment.slotCount(); i++) {
        segment.slot(i).storeVolatile(0x3fff_ffff_ffff_ffffL);
      }
    }
    fetched.add(segment);
    fetchedQueue.add(segment);
    return segment;
  }

  @Override
  public void returnSegment(Segment segment) {
    if (returned.contains(segment)) {
      throw new AssertionError("segment " + segment + " returned twice");
    }
    if (!fetched.contains(segment)) {
      throw new AssertionError("segment " + segment + " was never fetched");
    }
    returned.add(segment);
    segment.close();
    returnedQueue.add(segment);
  }

  int fetchCalls() {
    return fetchCalls.get();
  }

  List<Segment> fetched() {
    synchronized (fetched) {
      return new ArrayList<>(fetched);
    }
  }

  List<Segment> returned() {
    synchronized (returned) {
      return new ArrayList<>(returned);
    }
  }
}
