package io.scr.cache;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One lock stripe: the access-ordered list of the entries whose keys hash here, and a lossy buffer
 * of recent releases that is replayed into the list under the lock.
 *
 * <p><b>Concurrency contract.</b> {@link #lock} owns the list (the sentinel's and every member's
 * {@code prev}/{@code next}/{@code linked}), {@link #closed} and the buffer's read side. The lock
 * is held only for list bookkeeping: linking a loaded entry, replaying the buffer, picking an
 * eviction victim and retiring it. No loader, {@code close()} or predicate of the caller runs under
 * it; {@link CachedValue#isValid()} does, during maintenance, and may then meet a value whose close
 * has been queued: an entry is <em>not</em> always unlinked before its close is queued (a retirer
 * sets RETIRED before it takes this lock to unlink, and the last lease's release queues the close
 * without any lock), so {@link #sweep} only acts on what {@link Node#retireIfIdle()} confirms.
 *
 * <p>The buffer's write side is lock-free: a release that makes an entry idle offers the node with
 * one CAS on {@link #writeCounter} and a lazy store. The buffer is lossy: when it is full or the
 * CAS loses a race the access is dropped, and the entry keeps its older position. This is the same
 * trade Caffeine's read buffers make: LRU order is approximate under contention, hits never wait.
 * When the buffer fills the releasing thread drains it if {@code tryLock} succeeds.
 *
 * <p>The list is ordered by when each entry last became idle (least recent first), with newly
 * loaded entries at the tail. Leased entries stay in the list; victim selection skips them.
 */
final class Stripe<K, V extends CachedValue> {
  static final int BUFFER_SIZE = 16;
  private static final int BUFFER_MASK = BUFFER_SIZE - 1;

  final int index;
  final ReentrantLock lock = new ReentrantLock();

  @GuardedBy("lock")
  private final Node<K, V> sentinel;

  @GuardedBy("lock")
  private int size;

  @GuardedBy("lock")
  boolean closed;

  private final AtomicReferenceArray<Node<K, V>> buffer = new AtomicReferenceArray<>(BUFFER_SIZE);
  private final AtomicLong writeCounter = new AtomicLong();

  /** Written only under {@link #lock}; read without it by writers checking for room. */
  private volatile long readCounter;

  Stripe(int index) {
    this.index = index;
    Node<K, V> s = new Node<>(this);
    s.prev = s;
    s.next = s;
    this.sentinel = s;
  }

  /**
   * Records that {@code node} became idle. Lock-free; may drop the record. Returns true if the
   * buffer is full and should be drained.
   */
  boolean recordIdle(Node<K, V> node) {
    long head = readCounter;
    long tail = writeCounter.get();
    if (tail - head >= BUFFER_SIZE) {
      return true;
    }
    if (writeCounter.compareAndSet(tail, tail + 1)) {
      buffer.lazySet((int) tail & BUFFER_MASK, node);
      return tail + 1 - head >= BUFFER_SIZE;
    }
    return false;
  }

  /** Replays recorded releases: each still-linked node moves to the tail. */
  @GuardedBy("lock")
  void drainBuffer() {
    long head = readCounter;
    long tail = writeCounter.get();
    for (; head < tail; head++) {
      int i = (int) head & BUFFER_MASK;
      Node<K, V> n = buffer.get(i);
      if (n == null) {
        break; // the writer won its CAS but has not stored yet; pick it up next time
      }
      buffer.lazySet(i, null);
      if (n.linked) {
        unlinkNode(n);
        linkLast(n);
      }
    }
    readCounter = head;
  }

  /** Drains the buffer if the lock is free; never blocks. */
  void tryDrain() {
    if (lock.tryLock()) {
      try {
        drainBuffer();
      } finally {
        lock.unlock();
      }
    }
  }

  @GuardedBy("lock")
  void link(Node<K, V> n) {
    linkLast(n);
    n.linked = true;
    size++;
  }

  /** Unlinks {@code n} if linked; returns whether it was. */
  @GuardedBy("lock")
  boolean unlink(Node<K, V> n) {
    if (!n.linked) {
      return false;
    }
    unlinkNode(n);
    n.linked = false;
    size--;
    return true;
  }

  @GuardedBy("lock")
  int size() {
    return size;
  }

  /**
   * Retires and unlinks the least recently idle entry that is idle now, or returns null if every
   * entry here is leased.
   */
  @GuardedBy("lock")
  Node<K, V> retireEldestIdle() {
    for (Node<K, V> n = sentinel.next; n != sentinel; n = n.next) {
      if (n.retireIfIdle()) {
        unlink(n);
        return n;
      }
    }
    return null;
  }

  /**
   * Retires and unlinks every idle entry that is stale or has been idle for at least {@code
   * expiryNanos}, adding it to {@code stale} or {@code expired}. Walks the whole list: release
   * order is only approximate (lossy buffer) and staleness is unordered.
   */
  @GuardedBy("lock")
  void sweep(long now, long expiryNanos, List<Node<K, V>> expired, List<Node<K, V>> stale) {
    Node<K, V> n = sentinel.next;
    while (n != sentinel) {
      Node<K, V> next = n.next;
      if (n.state() == 0) {
        boolean invalid = !n.value.isValid();
        if ((invalid || now - n.idleSince() >= expiryNanos) && n.retireIfIdle()) {
          unlink(n);
          (invalid ? stale : expired).add(n);
        }
      }
      n = next;
    }
  }

  @GuardedBy("lock")
  private void linkLast(Node<K, V> n) {
    Node<K, V> last = sentinel.prev;
    n.prev = last;
    n.next = sentinel;
    last.next = n;
    sentinel.prev = n;
  }

  @GuardedBy("lock")
  private void unlinkNode(Node<K, V> n) {
    n.prev.next = n.next;
    n.next.prev = n.prev;
    n.prev = null;
    n.next = null;
  }
}
